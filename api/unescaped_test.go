package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestUnauthorizedBodyReadsAsWritten: the 401 body said
// "Bearer \u003ctoken\u003e" (HTML escaping of a JSON body).
func TestUnauthorizedBodyReadsAsWritten(t *testing.T) {
	f := newFixture(t)
	r := f.do("GET", "/v1/topics", "", "")
	f.want(r, http.StatusUnauthorized, "unauthorized")
	if !strings.Contains(r.raw, "Authorization: Bearer <token>") || strings.Contains(r.raw, `\u003c`) {
		t.Errorf("401 body %q, want Bearer <token> unescaped", r.raw)
	}
}
