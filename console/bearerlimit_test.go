package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestWrongBearerTokensAreLimitedWithTheLogins: wrong bearer tokens count
// against the client's address like wrong logins: past the limit every
// credential from it is answered 429 with Retry-After, a bearer token or
// the login form alike, and the limiter's log says so. Before, a bearer
// token could be guessed at 3,900 tries a second, with no 429 and no log.
func TestWrongBearerTokensAreLimitedWithTheLogins(t *testing.T) {
	f := newFixture(t, "console-token-0123456789")
	wrong := map[string]string{"Authorization": "Bearer wrong-token-0123456789"}
	var res *http.Response
	for i := range 11 {
		res, _ = f.do("POST", "/topics/orders/pause", url.Values{"confirm": {"yes"}}, wrong)
		if i < 10 && res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong bearer token %d: status %d, want 401", i+1, res.StatusCode)
		}
	}
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Fatalf("11th wrong bearer token: status %d, Retry-After %q; want 429 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	res, _ = f.do("POST", "/topics/orders/pause", url.Values{"confirm": {"yes"}}, f.bearer())
	if res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the right bearer token while limited: status %d, want 429", res.StatusCode)
	}
	res, body := f.do("POST", "/login", url.Values{"token": {f.token}}, nil)
	if res.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "Too many") {
		t.Errorf("the login form while limited: status %d, want 429", res.StatusCode)
	}
}
