package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
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

// secure sets the security headers of every answer, refuses a Host it does
// not answer to (421; see hostSet) and logs each request by method, path and
// status: never its query or form, which may name a message.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		if r.URL.Path != "/healthz" && !s.hosts.allows(r.Host) {
			// The probes of an orchestrator send the pod's address:
			// /healthz says only "ok", so it answers any host.
			http.Error(sw, "421 misdirected request: this console does not answer to that host name "+
				"(DELAYBRIDGE_CONSOLE_HOSTS)", http.StatusMisdirectedRequest)
		} else {
			next.ServeHTTP(sw, r)
		}
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

// sessionCookie holds a session id (see sessions); the CSRF token of a
// session is an HMAC of its id keyed by the console token.
const sessionCookie = "delaybridge_console"

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
	sid := s.sessions.create(time.Now())
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: sid, Path: "/",
		MaxAge: int(s.opts.SessionTTL.Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || s.opts.SecureCookie})
}

// endSession deletes the request's session on the server and asks the
// browser to drop the cookie.
func (s *Server) endSession(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || s.opts.SecureCookie})
}

// session is the request's valid session id, if any.
func (s *Server) session(r *http.Request) (string, bool) {
	if s.opts.Token == "" {
		return "", false
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil || !s.sessions.valid(c.Value, time.Now()) {
		return "", false
	}
	return c.Value, true
}

// csrfToken is the session's form token.
func (s *Server) csrfToken(sid string) string { return s.mac("csrf", sid) }

// sameOrigin refuses requests a browser made for another site: by
// Sec-Fetch-Site when the browser sends it, and by Origin when present: its
// host must be the request's and one the console answers to (a rebound
// evil.example sends Origin and Host both evil.example). Under
// Referrer-Policy no-referrer a browser posts a form with "Origin: null", so
// null passes only with Sec-Fetch-Site: same-origin.
func (s *Server) sameOrigin(r *http.Request) bool {
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
		if err != nil || u.Host != r.Host || !s.hosts.allows(u.Host) {
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
	case !s.sameOrigin(r):
		s.fail(w, r, http.StatusForbidden, "Cross-site request refused.")
		return false
	}
	if r.Header.Get("Authorization") != "" {
		return s.bearer(w, r, "Wrong token.")
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

// reader guards a page that shows message bodies: with ReadRequiresToken it
// needs a session or the bearer token, like an action but without the CSRF
// token (a GET changes nothing).
func (s *Server) reader(page http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.ReadRequiresToken {
			if s.opts.Token == "" {
				s.fail(w, r, http.StatusForbidden, "Message bodies are hidden: DELAYBRIDGE_CONSOLE_READ_REQUIRES_TOKEN is set and no DELAYBRIDGE_CONSOLE_TOKEN is.")
				return
			}
			const refused = "Log in with the console token to read messages."
			if _, ok := s.session(r); !ok {
				if r.Header.Get("Authorization") == "" {
					w.Header().Set("WWW-Authenticate", `Bearer realm="delaybridge console"`)
					s.fail(w, r, http.StatusUnauthorized, refused)
					return
				}
				if !s.bearer(w, r, refused) {
					return
				}
			}
		}
		page(w, r)
	})
}

// bearer reports whether r carries the console token as a bearer token,
// answering the refusal itself (401 with refused, or 429 with Retry-After).
// Wrong bearer tokens count against the client's address in the login
// limiter, as wrong logins do, so guessing costs the same either way.
func (s *Server) bearer(w http.ResponseWriter, r *http.Request, refused string) bool {
	addr, now := clientAddr(r), time.Now()
	if wait, ok := s.logins.allow(addr, now); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		s.fail(w, r, http.StatusTooManyRequests, "Too many wrong tokens from your address: try again in a minute.")
		return false
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !s.tokenOK(tok) {
		s.logins.failed(addr, now)
		w.Header().Set("WWW-Authenticate", `Bearer realm="delaybridge console"`)
		s.fail(w, r, http.StatusUnauthorized, refused)
		return false
	}
	return true
}
