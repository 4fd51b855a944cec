package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/console"
	"github.com/delaybridge/delaybridge/queue"
)

// request serves one request with the given Host and client address.
func request(t *testing.T, srv http.Handler, method, target, host, remote string, form url.Values, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, target, body)
	r.Host, r.RemoteAddr = host, remote
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Result(), string(b)
}

// A page on evil.example that points its name at 127.0.0.1 (DNS rebinding)
// makes the browser send Host: evil.example: the console must not answer
// it, token or not; the orchestrator's /healthz probe answers any host.
func TestForeignHostIsRefused(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	srv, err := console.New(console.Options{Queue: f.q, Prefix: f.prefix, Token: f.token,
		Hosts: console.DefaultHosts(&net127{port: 18081}, "127.0.0.1:18081")})
	if err != nil {
		t.Fatal(err)
	}
	const evil = "evil.example:18081"
	for _, target := range []string{"/", "/api/overview", "/topics/orders", "/login"} {
		res, body := request(t, srv, "GET", target, evil, "192.0.2.1:1", nil, nil)
		wantStatus(t, res, body, http.StatusMisdirectedRequest)
	}
	res, body := request(t, srv, "POST", "/topics/orders/pause", evil, "192.0.2.1:1", confirmed,
		map[string]string{"Authorization": "Bearer s3cret-token", "Origin": "http://" + evil})
	wantStatus(t, res, body, http.StatusMisdirectedRequest)
	if f.paused(f.orders) {
		t.Fatal("an action for a foreign host paused the topic")
	}
	for _, host := range []string{"localhost:18081", "127.0.0.1:18081", "[::1]:18081", "LOCALHOST:18081"} {
		res, body := request(t, srv, "GET", "/api/overview", host, "127.0.0.1:1", nil, nil)
		wantStatus(t, res, body, http.StatusOK)
	}
	for _, host := range []string{"localhost:18082", "localhost", "127.0.0.2:18081"} {
		res, body := request(t, srv, "GET", "/", host, "127.0.0.1:1", nil, nil)
		wantStatus(t, res, body, http.StatusMisdirectedRequest)
	}
	res, body = request(t, srv, "GET", "/healthz", "10.1.2.3:18081", "10.1.2.4:1", nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	// An allowed Host with the Origin of another allowed host is no
	// same-origin request either.
	res, body = request(t, srv, "POST", "/topics/orders/pause", "localhost:18081", "127.0.0.1:1", confirmed,
		map[string]string{"Authorization": "Bearer s3cret-token", "Origin": "http://127.0.0.1:18081"})
	wantStatus(t, res, body, http.StatusForbidden)
}

// net127 is a listener address on 0.0.0.0 (all interfaces) and a port.
type net127 struct{ port int }

func (a *net127) Network() string { return "tcp" }
func (a *net127) String() string  { return "0.0.0.0:" + strconv.Itoa(a.port) }

func TestDefaultHosts(t *testing.T) {
	for _, c := range []struct {
		configured string
		want       string
	}{
		{":18081", "localhost:18081 127.0.0.1:18081 [::1]:18081"},
		{"0.0.0.0:18081", "localhost:18081 127.0.0.1:18081 [::1]:18081"},
		{"127.0.0.1:18081", "localhost:18081 127.0.0.1:18081 [::1]:18081"},
		{"console.internal:18081", "localhost:18081 127.0.0.1:18081 [::1]:18081 console.internal:18081"},
		{"[fd00::1]:18081", "localhost:18081 127.0.0.1:18081 [::1]:18081 [fd00::1]:18081"},
	} {
		if got := strings.Join(console.DefaultHosts(&net127{port: 18081}, c.configured), " "); got != c.want {
			t.Errorf("DefaultHosts(%s) = %s, want %s", c.configured, got, c.want)
		}
	}
}

// Logout deletes the session on the server: a copy of the cookie (and its
// CSRF token) taken before is refused after.
func TestLogoutEndsTheSessionOnTheServer(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	cookie, csrf := f.login()
	session := map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "same-origin", "Origin": "http://example.com"}
	res, body := f.do("POST", "/topics/orders/pause", url.Values{"csrf": {csrf}, "confirm": {"yes"}}, session)
	wantStatus(t, res, body, http.StatusOK)
	res, body = f.do("POST", "/logout", url.Values{}, session)
	wantStatus(t, res, body, http.StatusSeeOther)
	res, body = f.do("POST", "/topics/orders/resume", url.Values{"csrf": {csrf}, "confirm": {"yes"}}, session)
	wantStatus(t, res, body, http.StatusUnauthorized)
	if !f.paused(f.orders) {
		t.Fatal("the cookie of a logged-out session resumed the topic")
	}
}

func TestSessionEndsAfterItsTTL(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	srv, err := console.New(console.Options{Queue: f.q, Prefix: f.prefix, Token: f.token, Hosts: []string{"example.com"}, SessionTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	cookie, _ := f.login()
	if res, body := f.do("GET", "/", nil, map[string]string{"Cookie": cookie}); !strings.Contains(body, "Log out") {
		t.Fatalf("not logged in (%d):\n%s", res.StatusCode, body)
	}
	time.Sleep(1100 * time.Millisecond)
	if _, body := f.do("GET", "/", nil, map[string]string{"Cookie": cookie}); strings.Contains(body, "Log out") {
		t.Fatal("the session outlived its TTL")
	}
}

// Ten wrong tokens a minute from one address; the eleventh attempt, even
// with the right token, is answered 429 with Retry-After. Another address
// is not held, and the log has one line for the first failure and one for
// the limit, not one per try.
func TestEleventhWrongLoginWithinAMinuteIs429(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	var logs bytes.Buffer
	srv, err := console.New(console.Options{Queue: f.q, Prefix: f.prefix, Token: f.token, Hosts: []string{"example.com"},
		Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	login := func(remote, token string) (*http.Response, string) {
		return request(t, srv, "POST", "/login", "example.com", remote, url.Values{"token": {token}}, nil)
	}
	for i := 0; i < 10; i++ {
		res, body := login("192.0.2.7:4000", "wrong-"+strconv.Itoa(i))
		wantStatus(t, res, body, http.StatusUnauthorized)
	}
	for _, token := range []string{"wrong-11", "s3cret-token"} {
		res, body := login("192.0.2.7:4001", token)
		wantStatus(t, res, body, http.StatusTooManyRequests)
		if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || s < 1 || s > 61 {
			t.Errorf("Retry-After %q, want 1 to 61 seconds", res.Header.Get("Retry-After"))
		}
	}
	res, body := login("198.51.100.1:4000", "s3cret-token")
	wantStatus(t, res, body, http.StatusSeeOther)
	if n := strings.Count(logs.String(), "console: login with a wrong token"); n != 1 {
		t.Errorf("%d lines for the first wrong login, want 1:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), `"msg":"console: wrong logins limited","remote":"192.0.2.7","count":10`); n != 1 {
		t.Errorf("%d lines for the limit, want 1 with the count:\n%s", n, logs.String())
	}
}

// With ReadRequiresToken the pages that show message bodies need a login or
// the bearer token; the overview (counts) stays open.
func TestReadRequiresToken(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	f.schedule(f.orders, "secret body", time.Hour)
	srv, err := console.New(console.Options{Queue: f.q, Prefix: f.prefix, Token: f.token, Hosts: []string{"example.com"}, ReadRequiresToken: true})
	if err != nil {
		t.Fatal(err)
	}
	plain, bodyOf := f.srv, func(target string, hdr map[string]string) (*http.Response, string) {
		return f.do("GET", target, nil, hdr)
	}
	f.srv = srv
	res, body := bodyOf("/topics/orders", nil)
	wantStatus(t, res, body, http.StatusUnauthorized)
	if strings.Contains(body, "secret body") {
		t.Fatal("the 401 page shows a body")
	}
	res, body = bodyOf("/", nil)
	wantStatus(t, res, body, http.StatusOK)
	res, body = bodyOf("/topics/orders", f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "secret body")
	cookie, _ := f.login()
	res, body = bodyOf("/topics/orders", map[string]string{"Cookie": cookie})
	wantStatus(t, res, body, http.StatusOK)

	f.srv = plain // without the option, reading needs nothing
	res, body = bodyOf("/topics/orders", nil)
	wantStatus(t, res, body, http.StatusOK)

	noToken, err := console.New(console.Options{Queue: f.q, Prefix: f.prefix, Hosts: []string{"example.com"}, ReadRequiresToken: true})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = noToken
	res, body = bodyOf("/topics/orders", nil)
	wantStatus(t, res, body, http.StatusForbidden)
}

// A topic registered before names were checked may hold '/', '?' and '#':
// every link and form the console builds escapes it as one path segment.
func TestTopicNameIsEscapedInEveryPath(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	const name = "a/b?c#d"
	doc, _ := json.Marshal(queue.Layout{Version: queue.LayoutVersion, Slots: 1, Format: queue.FormatRaw, Sink: "amqp"})
	if err := f.rdb.HSet(context.Background(), queue.TopicsKey(f.prefix), name, string(doc)).Err(); err != nil {
		t.Fatal(err)
	}
	_, body := f.do("GET", "/", nil, nil)
	wantContains(t, body, `href="/topics/a%2Fb%3Fc%23d"`)
	cookie, _ := f.login()
	res, body := f.do("GET", "/topics/a%2Fb%3Fc%23d", nil, map[string]string{"Cookie": cookie})
	wantStatus(t, res, body, http.StatusOK)
	if strings.Contains(body, `/topics/a/b`) {
		t.Errorf("the topic page builds an unescaped path:\n%s", body)
	}
	wantContains(t, body, `action="/topics/a%2Fb%3Fc%23d/pause"`)
}
