package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// csp allows the console's own files and nothing else: no inline script or
// style, no framing, forms post only to the console.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// secure sets the security headers of every answer and logs each request by
// method, path and status: never its query or form, which may name a
// message.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		s.opts.Log.Debug("console request", "method", r.Method, "path", r.URL.Path, "status", sw.status)
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// sessionCookie holds "<sid>.<mac>": sid is random bytes and the time of
// login, mac an HMAC of sid keyed by the token. No state on the server;
// changing the token ends every session.
const (
	sessionCookie = "delaybridge_console"
	sessionMaxAge = 12 * time.Hour
)

func (s *Server) mac(purpose, sid string) string {
	m := hmac.New(sha256.New, []byte(s.opts.Token))
	m.Write([]byte(purpose + "\x00" + sid))
	return hex.EncodeToString(m.Sum(nil))
}

// tokenOK compares a presented token with the configured one in constant
// time (hashing both first, so not even the length leaks).
func (s *Server) tokenOK(presented string) bool {
	a, b := sha256.Sum256([]byte(presented)), sha256.Sum256([]byte(s.opts.Token))
	return s.opts.Token != "" && subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

func (s *Server) newSession(w http.ResponseWriter, r *http.Request) {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	sid := base64.RawURLEncoding.EncodeToString(b) + "." + strconv.FormatInt(time.Now().Unix(), 10)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: sid + "." + s.mac("session", sid), Path: "/",
		MaxAge: int(sessionMaxAge.Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || s.opts.SecureCookie})
}

func (s *Server) endSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || s.opts.SecureCookie})
}

// session is the request's valid session id, if any.
func (s *Server) session(r *http.Request) (string, bool) {
	if s.opts.Token == "" {
		return "", false
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", false
	}
	i := strings.LastIndexByte(c.Value, '.')
	if i < 0 {
		return "", false
	}
	sid, mac := c.Value[:i], c.Value[i+1:]
	if !hmac.Equal([]byte(mac), []byte(s.mac("session", sid))) {
		return "", false
	}
	_, issued, _ := strings.Cut(sid, ".")
	sec, err := strconv.ParseInt(issued, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)) > sessionMaxAge {
		return "", false
	}
	return sid, true
}

// csrfToken is the session's form token.
func (s *Server) csrfToken(sid string) string { return s.mac("csrf", sid) }

// sameOrigin refuses requests a browser made for another site: by
// Sec-Fetch-Site when the browser sends it, and by Origin when present.
// Under Referrer-Policy no-referrer a browser posts a form with "Origin:
// null", so null passes only with Sec-Fetch-Site: same-origin.
func sameOrigin(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	switch site {
	case "", "same-origin", "none":
	default:
		return false
	}
	switch o := r.Header.Get("Origin"); o {
	case "":
	case "null":
		return site == "same-origin"
	default:
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return false
		}
	}
	return true
}

// authorize decides whether r may change anything, answering the refusal
// itself: 403 when the console is read-only, the request comes from another
// site or lacks the session's CSRF token; 401 without a valid token or
// session. A bearer token needs no CSRF token: a browser never adds the
// header on its own.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case s.opts.Token == "":
		s.fail(w, r, http.StatusForbidden, "The console is read-only: DELAYBRIDGE_CONSOLE_TOKEN is not set, so no action is allowed.")
		return false
	case !sameOrigin(r):
		s.fail(w, r, http.StatusForbidden, "Cross-site request refused.")
		return false
	}
	if h := r.Header.Get("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if !ok || !s.tokenOK(tok) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="delaybridge console"`)
			s.fail(w, r, http.StatusUnauthorized, "Wrong token.")
			return false
		}
		return true
	}
	sid, ok := s.session(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="delaybridge console"`)
		s.fail(w, r, http.StatusUnauthorized, "Log in with the console token first.")
		return false
	}
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrfToken(sid))) != 1 {
		s.fail(w, r, http.StatusForbidden, "Missing or wrong form token (CSRF): reload the page and try again.")
		return false
	}
	return true
}
