package console

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Wrong logins are limited per client address: loginLimit failures in a
// loginWindow, then every login from that address is answered 429 until the
// window ends, right token or not, so guessing costs a minute per ten tries.
// An attacker spraying from many addresses is held by maxLoginClients.
const (
	loginLimit      = 10
	loginWindow     = time.Minute
	maxLoginClients = 10000
)

type loginLimiter struct {
	mu  sync.Mutex
	log *slog.Logger
	m   map[string]*loginTries
}

// loginTries counts one address's wrong logins in the window from start.
type loginTries struct {
	start    time.Time
	failures int
	refused  int // attempts answered 429
}

func newLoginLimiter(log *slog.Logger) *loginLimiter {
	return &loginLimiter{log: log, m: map[string]*loginTries{}}
}

// clientAddr is the address limits apply to: the peer's IP, an IPv6 one cut
// to its /64 (one host commonly holds the whole /64).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}

// allow reports whether addr may try a login now; when it may not, the
// attempt is counted and wait is how long until it may.
func (l *loginLimiter) allow(addr string, now time.Time) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.current(addr, now)
	if t == nil || t.failures < loginLimit {
		return 0, true
	}
	t.refused++
	return t.start.Add(loginWindow).Sub(now), false
}

// failed counts a wrong token from addr. The first of a window is logged at
// once; the rest are summed up when the window ends (flush).
func (l *loginLimiter) failed(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.current(addr, now)
	if t == nil {
		if len(l.m) >= maxLoginClients {
			l.flushLocked(now)
		}
		t = &loginTries{start: now}
		l.m[addr] = t
		l.log.Warn("console: login with a wrong token", "remote", addr)
	}
	t.failures++
	if t.failures == loginLimit {
		l.log.Warn("console: wrong logins limited", "remote", addr, "count", t.failures,
			"retry_after", t.start.Add(loginWindow).Sub(now).Round(time.Second).String())
	}
}

// current is addr's open window, after logging and dropping one that ended.
func (l *loginLimiter) current(addr string, now time.Time) *loginTries {
	t := l.m[addr]
	if t != nil && now.Sub(t.start) >= loginWindow {
		l.report(addr, t)
		delete(l.m, addr)
		return nil
	}
	return t
}

// flush logs and drops every window that ended; Serve calls it each
// loginWindow so a burst is summed up even when its address goes quiet.
func (l *loginLimiter) flush(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked(now)
}

func (l *loginLimiter) flushLocked(now time.Time) {
	for addr, t := range l.m {
		if now.Sub(t.start) >= loginWindow || len(l.m) >= maxLoginClients {
			l.report(addr, t)
			delete(l.m, addr)
		}
	}
}

// report logs a window's wrong logins beyond the first, already logged.
func (l *loginLimiter) report(addr string, t *loginTries) {
	if t.failures > 1 || t.refused > 0 {
		l.log.Warn("console: wrong logins", "remote", addr, "count", t.failures, "refused", t.refused,
			"interval", loginWindow.String())
	}
}
