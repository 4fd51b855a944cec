package console

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// pageTemplate is one page: the layout with the page's own "content".
type pageTemplate struct{ t *template.Template }

var pageNames = []string{"overview", "topic", "message", "confirm", "result", "login", "error"}

var funcs = template.FuncMap{
	"ms": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return strconv.FormatInt(t.UnixMilli(), 10)
	},
	"utc": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
	},
	"age": func(d time.Duration) string { return shortDuration(d) },
	// seg escapes one path segment: a topic registered before names were
	// checked may hold '/', '?' or '#'.
	"seg": url.PathEscape,
}

func parsePages() (map[string]*pageTemplate, error) {
	out := map[string]*pageTemplate{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: parse template %s: %w", name, err)
		}
		out[name] = &pageTemplate{t: t}
	}
	return out, nil
}

// base is what the layout needs of every page.
type base struct {
	Title    string
	ReadOnly bool // no token configured
	LoggedIn bool
	CSRF     string
	Refresh  int64 // ms, for the overview's script
}

func (s *Server) base(r *http.Request, title string) base {
	b := base{Title: title, ReadOnly: s.opts.Token == "", Refresh: s.opts.Refresh.Milliseconds()}
	if sid, ok := s.session(r); ok {
		b.LoggedIn, b.CSRF = true, s.csrfToken(sid)
	}
	return b
}

// render executes a page (or one template of it) into a buffer first, so
// a failure is a clean 500, never half a page.
func (s *Server) render(w http.ResponseWriter, status int, page, tmpl string, data any) {
	var buf bytes.Buffer
	if err := s.pages[page].t.ExecuteTemplate(&buf, tmpl, data); err != nil {
		s.opts.Log.Error("console: render", "page", page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

type errorView struct {
	base
	Status  int
	Message string
}

// fail renders an error page with status.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, status, "error", "layout.html", errorView{base: s.base(r, http.StatusText(status)), Status: status, Message: msg})
}

// shortDuration prints a duration in at most two units: 3d4h, 4h3m, 3m2s,
// 2.5s, 120ms.
func shortDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		r := d.Round(time.Second)
		return fmt.Sprintf("%dm%ds", int(r.Minutes()), int(r.Seconds())%60)
	case d < 24*time.Hour:
		r := d.Round(time.Minute)
		return fmt.Sprintf("%dh%dm", int(r.Hours()), int(r.Minutes())%60)
	}
	r := d.Round(time.Hour)
	return fmt.Sprintf("%dd%dh", int(r.Hours())/24, int(r.Hours())%24)
}
