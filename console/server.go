package console

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/queue"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Options configure a console.
type Options struct {
	Queue *queue.Queue
	// Prefix is the key prefix (DELAYBRIDGE_KEY_PREFIX).
	Prefix string
	// Configured are the topics of DELAYBRIDGE_TOPICS, checked against the
	// registry; when empty the console shows every registered topic.
	Configured []queue.Layout
	// Token unlocks the actions; empty makes the console read-only.
	Token string
	// SecureCookie marks the session cookie Secure over plain HTTP too (a
	// TLS proxy in front); it is always Secure over TLS.
	SecureCookie bool
	// Hosts are the Host header values the console answers to
	// (DELAYBRIDGE_CONSOLE_HOSTS, else DefaultHosts): "name:port", or "name"
	// for any port. Empty: localhost, 127.0.0.1 and [::1] on any port.
	Hosts []string
	// ReadRequiresToken hides message bodies (topic pages, message pages,
	// find) from anyone without a session or bearer token
	// (DELAYBRIDGE_CONSOLE_READ_REQUIRES_TOKEN); the overview stays open.
	ReadRequiresToken bool
	// SessionTTL is how long a login lasts; 0 means DefaultSessionTTL.
	SessionTTL time.Duration
	// OwnershipAll: every replica scans every slot (DELAYBRIDGE_OWNERSHIP=all).
	OwnershipAll bool
	// Limits are the flow control of each topic in the console's own
	// environment, by topic (flowstate.EnvLimits): shown, overridden by those
	// set at run time, only while no daemon is known (none reports the
	// limits it runs the topic with, flowstate.EnvOf, and none is live). A
	// topic without an entry has only the run-time ones then.
	Limits map[string]flowstate.Limits
	// Refresh is how often the overview refreshes itself; 0 means 3s.
	Refresh time.Duration
	// Timeouts bound slow and idle connections; a zero field takes its
	// DefaultTimeouts value.
	Timeouts Timeouts
	Log      *slog.Logger
}

// Timeouts bound what a client may hold of the server: the request's
// header and whole body (a slow POST), the answer, and an idle keep-alive
// connection (net/http's ReadHeaderTimeout, ReadTimeout, WriteTimeout and
// IdleTimeout).
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// DefaultTimeouts: a header within 5 s, a request within 30 s, an answer
// within 30 s, an idle connection closed after 60 s.
var DefaultTimeouts = Timeouts{ReadHeader: 5 * time.Second, Read: 30 * time.Second, Write: 30 * time.Second, Idle: time.Minute}

// orDefault fills the zero fields of t from DefaultTimeouts.
func (t Timeouts) orDefault() Timeouts {
	d := DefaultTimeouts
	return Timeouts{ReadHeader: cmp.Or(t.ReadHeader, d.ReadHeader), Read: cmp.Or(t.Read, d.Read),
		Write: cmp.Or(t.Write, d.Write), Idle: cmp.Or(t.Idle, d.Idle)}
}

// Apply sets t on srv.
func (t Timeouts) Apply(srv *http.Server) {
	srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout = t.ReadHeader, t.Read, t.Write, t.Idle
}

// Server is the console's HTTP handler.
type Server struct {
	opts     Options
	flow     *flowstate.Store // the topics' flow control, over opts.Queue
	pages    map[string]*pageTemplate
	cursors  *cursorStore
	hosts    hostSet
	sessions *sessions
	logins   *loginLimiter
	handler  http.Handler
}

// redisTimeout bounds the Redis calls of one request.
const redisTimeout = 5 * time.Second

// New builds a console.
func New(opts Options) (*Server, error) {
	if opts.Queue == nil {
		return nil, errors.New("console: no queue")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 3 * time.Second
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	s := &Server{opts: opts, flow: flowstate.New(opts.Queue), pages: pages, cursors: newCursorStore(10000), hosts: newHostSet(opts.Hosts),
		sessions: newSessions(opts.SessionTTL, 10000), logins: newLoginLimiter(opts.Log)}
	s.handler = s.secure(s.routes())
	return s, nil
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /{$}", s.overviewPage)
	mux.HandleFunc("GET /overview/live", s.overviewLive)
	mux.HandleFunc("GET /api/overview", s.overviewJSON)
	mux.Handle("GET /topics/{topic}", s.reader(s.topicPage))
	mux.Handle("GET /topics/{topic}/find", s.reader(s.findMessage))
	mux.Handle("GET /topics/{topic}/messages/{slot}/{mid}", s.reader(s.messagePage))
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.logout)
	for name, a := range s.actions() {
		mux.Handle("POST /topics/{topic}/"+name, s.action(name, a))
	}
	return mux
}

// ServeHTTP serves the console.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Serve serves the console on ln until ctx ends, then shuts down within
// five seconds.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s, ErrorLog: slog.NewLogLogger(s.opts.Log.Handler(), slog.LevelWarn)}
	s.opts.Timeouts.orDefault().Apply(srv)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(loginWindow)
		defer tick.Stop()
		for stop := false; !stop; {
			select {
			case now := <-tick.C:
				s.logins.flush(now)
			case <-ctx.Done():
				stop = true
			}
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	cancel()
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serve console: %w", err)
}
