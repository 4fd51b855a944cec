package console

import (
	"net/http"
)

// The login form trades the console token for a session cookie (HttpOnly,
// SameSite=Strict, Secure over TLS or with SecureCookie), so a browser can
// act without sending the token again.

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
	case !sameOrigin(r):
		s.fail(w, r, http.StatusForbidden, "Cross-site request refused.")
		return
	case !s.tokenOK(r.PostFormValue("token")):
		s.opts.Log.Warn("console: login with a wrong token", "remote", r.RemoteAddr)
		s.render(w, http.StatusUnauthorized, "login", "layout.html", loginView{base: s.base(r, "Log in"), Error: "Wrong token."})
		return
	}
	s.newSession(w, r)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the session; it changes nothing in Redis, so it only needs a
// same-origin request.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		s.fail(w, r, http.StatusForbidden, "Cross-site request refused.")
		return
	}
	s.endSession(w, r)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
