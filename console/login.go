package console

import (
	"net/http"
	"strconv"
	"time"
)

// The login form trades the console token for a session cookie (HttpOnly,
// SameSite=Strict, Secure over TLS or with SecureCookie), so a browser can
// act without sending the token again. Wrong tokens are limited per client
// address (loginLimiter).

type loginView struct {
	base
	Error string
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, http.StatusOK, "login", "layout.html", loginView{base: s.base(r, "Log in")})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	switch {
	case s.opts.Token == "":
		s.fail(w, r, http.StatusForbidden, "The console is read-only: DELAYBRIDGE_CONSOLE_TOKEN is not set, so there is nothing to log in to.")
		return
	case !s.sameOrigin(r):
		s.fail(w, r, http.StatusForbidden, "Cross-site request refused.")
		return
	}
	addr, now := clientAddr(r), time.Now()
	if wait, ok := s.logins.allow(addr, now); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		s.fail(w, r, http.StatusTooManyRequests, "Too many wrong tokens from your address: try again in a minute.")
		return
	}
	if !s.tokenOK(r.PostFormValue("token")) {
		s.logins.failed(addr, now)
		s.render(w, http.StatusUnauthorized, "login", "layout.html", loginView{base: s.base(r, "Log in"), Error: "Wrong token."})
		return
	}
	s.newSession(w, r)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the session (deleted on the server: the cookie no longer works
// anywhere); it changes nothing in Redis, so it only needs a same-origin
// request.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if !s.sameOrigin(r) {
		s.fail(w, r, http.StatusForbidden, "Cross-site request refused.")
		return
	}
	s.endSession(w, r)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
