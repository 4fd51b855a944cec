package console

import (
	"net/http"
	"strings"
)

// A console action called from a script (curl with the bearer token and an
// Accept without HTML, such as curl's */*) answers its result as one line of plain text with the
// same status, rather than a whole HTML page to dig the answer out of. A
// browser (Accept: text/html, or a session cookie instead of a token) gets
// the page.

// plainAnswer reports whether r wants the plain-text answer.
func plainAnswer(r *http.Request) bool {
	accept := r.Header.Get("Accept") // curl sends */*; a request without one gets the page as before
	return strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") && accept != "" && !strings.Contains(accept, "text/html")
}

// writePlain answers msg as one line of text.
func writePlain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}
