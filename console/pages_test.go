package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/console"
	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

func TestOverviewShowsTopicsBacklogAndSecurityHeaders(t *testing.T) {
	f := newFixture(t, "")
	f.kill(f.orders, "c")
	f.schedule(f.orders, "a", time.Hour)
	f.schedule(f.orders, "b", -time.Minute)
	res, body := f.do("GET", "/", nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, `href="/topics/orders"`, "exchange events, routing key orders", "Kafka topic events",
		"read-only: DELAYBRIDGE_CONSOLE_TOKEN is not set", `src="/static/console.js"`, "late")
	for h, want := range map[string]string{
		"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
	} {
		if got := res.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, " style=") {
		t.Errorf("inline script or style, which the CSP forbids:\n%s", body)
	}

	res, body = f.do("GET", "/overview/live", nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, `<div id="live">`, `data-topic="orders"`)

	res, body = f.do("GET", "/api/overview", nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	var ov struct {
		Topics []struct {
			Name                               string
			Scheduled, Overdue, Dead, Inflight int64
		}
	}
	if err := json.Unmarshal([]byte(body), &ov); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	if len(ov.Topics) != 2 || ov.Topics[1].Name != "orders" || ov.Topics[1].Scheduled != 2 || ov.Topics[1].Overdue != 1 || ov.Topics[1].Dead != 1 {
		t.Errorf("overview JSON = %+v, want orders with 2 scheduled, 1 overdue, 1 dead", ov.Topics)
	}
}

func TestOverviewSaysRedisIsUnreachableInsteadOfNumbers(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	srv, err := console.New(console.Options{Queue: queue.New(rdb), Prefix: "nowhere", Hosts: []string{"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, srv: srv}
	res, body := f.do("GET", "/", nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, `id="redis-down"`, "Redis is unreachable")
	if strings.Contains(body, `id="topics"`) {
		t.Errorf("the overview shows a table while Redis is down:\n%s", body)
	}
	res, body = f.do("GET", "/overview/live", nil, nil)
	wantStatus(t, res, body, http.StatusServiceUnavailable)
	wantContains(t, body, "Redis is unreachable")
}

func TestTopicPagePagesWithoutPuttingMembersInURLs(t *testing.T) {
	f := newFixture(t, "")
	for i := range 5 {
		f.schedule(f.orders, "secret-body-"+string(rune('a'+i)), time.Duration(i+1)*time.Hour)
	}
	seen := map[string]bool{}
	target := "/topics/orders?state=scheduled&limit=2"
	for pages := 0; target != ""; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		res, body := f.do("GET", target, nil, nil)
		wantStatus(t, res, body, http.StatusOK)
		for i := range 5 {
			if m := "secret-body-" + string(rune('a'+i)); strings.Contains(body, ">"+m+"<") {
				seen[m] = true
			}
		}
		target = ""
		if i := strings.Index(body, `id="next-page"`); i >= 0 {
			start := strings.LastIndex(body[:i], `href="`) + len(`href="`)
			next := strings.ReplaceAll(body[start:strings.Index(body[start:], `"`)+start], "&amp;", "&")
			if strings.Contains(next, "secret") || strings.Contains(next, "c2VjcmV0") {
				t.Errorf("next page URL %q carries a member", next)
			}
			target = next
		}
		for _, href := range hrefs(body) {
			if strings.Contains(href, "secret") {
				t.Errorf("link %q carries a member", href)
			}
		}
	}
	if len(seen) != 5 {
		t.Errorf("paging showed %d of 5 messages: %v", len(seen), seen)
	}

	due := url.QueryEscape(time.Now().Add(90 * time.Minute).UTC().Format(time.RFC3339))
	res, body := f.do("GET", "/topics/orders?due_before="+due, nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	if !strings.Contains(body, ">secret-body-a<") || strings.Contains(body, ">secret-body-b<") {
		t.Errorf("due_before filter: want only secret-body-a:\n%s", body)
	}
	res, body = f.do("GET", "/topics/nope", nil, nil)
	wantStatus(t, res, body, http.StatusNotFound)
}

func hrefs(body string) []string {
	var out []string
	for _, part := range strings.Split(body, `href="`)[1:] {
		out = append(out, part[:strings.IndexByte(part, '"')])
	}
	return out
}

func TestMessagePageShowsBodiesEscapedPrettyOrHex(t *testing.T) {
	f := newFixture(t, "")
	for _, c := range []struct{ member, want, notWant string }{
		{`<script>alert(1)</script>`, `&lt;script&gt;alert(1)&lt;/script&gt;`, `<script>alert`},
		{`{"order":42,"tags":["a"]}`, "{\n  &#34;order&#34;: 42,", ""},
		{"\x00\x01\xffbin", "00 01 ff 62 69 6e", ""},
	} {
		r := f.schedule(f.orders, c.member, time.Hour)
		res, body := f.do("GET", "/topics/orders/messages/"+itoa(r.Slot)+"/"+r.ID, nil, nil)
		wantStatus(t, res, body, http.StatusOK)
		wantContains(t, body, c.want, "data-ms=", "UTC", "scheduled")
		if c.notWant != "" && strings.Contains(body, c.notWant) {
			t.Errorf("body rendered unescaped:\n%s", body)
		}
	}
	res, body := f.do("GET", "/topics/orders/messages/0/"+strings.Repeat("0", 32), nil, nil)
	wantStatus(t, res, body, http.StatusNotFound)
	res, body = f.do("GET", "/topics/orders/messages/9/zz", nil, nil)
	wantStatus(t, res, body, http.StatusBadRequest)
}

func TestFindByEnvelopeIDShowsHeadersAndLastError(t *testing.T) {
	f := newFixture(t, "")
	r, err := f.q.Schedule(t.Context(), f.events, queue.Message{ID: "evt-1", Body: []byte("hello"), Headers: map[string]string{"x-tenant": "acme"}}, queue.In(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	res, body := f.do("GET", "/topics/events/find?id=evt-1", nil, nil)
	wantStatus(t, res, body, http.StatusSeeOther)
	loc := res.Header.Get("Location")
	if want := "/topics/events/messages/0/" + queue.MessageID([]byte(r.Member)); loc != want {
		t.Fatalf("find redirects to %q, want %q", loc, want)
	}
	res, body = f.do("GET", loc, nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "evt-1", "x-tenant", "acme", "hello")

	d := f.kill(f.orders, "dead-one")
	res, _ = f.do("GET", "/topics/orders/find?id="+d.ID, nil, nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("find raw by message id: status %d", res.StatusCode)
	}
	_, body = f.do("GET", res.Header.Get("Location"), nil, nil)
	wantContains(t, body, "dead", "NOT_FOUND - no exchange")
	res, body = f.do("GET", "/topics/events/find?id=nope", nil, nil)
	wantStatus(t, res, body, http.StatusNotFound)
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestLoginPageAssetsHealthAndLogout(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	res, body := f.do("GET", "/login", nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, `<form method="post" action="/login">`, `type="password" name="token"`)
	for path, ctype := range map[string]string{"/static/console.js": "javascript", "/static/style.css": "text/css", "/static/favicon.svg": "image/svg+xml"} {
		res, body := f.do("GET", path, nil, nil)
		wantStatus(t, res, body, http.StatusOK)
		if !strings.Contains(res.Header.Get("Content-Type"), ctype) || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: Content-Type %q, nosniff %q", path, res.Header.Get("Content-Type"), res.Header.Get("X-Content-Type-Options"))
		}
	}
	res, body = f.do("GET", "/healthz", nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	res, body = f.do("POST", "/logout", url.Values{}, nil)
	wantStatus(t, res, body, http.StatusSeeOther)
	if c := res.Cookies(); len(c) != 1 || c[0].MaxAge >= 0 {
		t.Errorf("logout cookies %+v: want the session cookie expired", c)
	}
	res, body = f.do("GET", "/logout", nil, nil)
	wantStatus(t, res, body, http.StatusMethodNotAllowed)
}

func TestSessionCookieIsSecureOverTLS(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	res, body := f.do("POST", "https://example.com/login", url.Values{"token": {f.token}}, nil)
	wantStatus(t, res, body, http.StatusSeeOther)
	if c := res.Cookies(); len(c) != 1 || !c[0].Secure || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie over TLS %+v: want Secure, HttpOnly, SameSite=Strict", c)
	}
}

// TestOverviewShowsAFullRedis: the overview's banner and JSON say Redis is
// full (a private Redis at its maxmemory), and say nothing on a healthy one.
func TestOverviewShowsAFullRedis(t *testing.T) {
	f := newFixture(t, "")
	if _, body := f.do("GET", "/", nil, nil); strings.Contains(body, `id="redis-full"`) || strings.Contains(body, `id="redis-evicting"`) {
		t.Errorf("the overview of a healthy Redis shows a memory banner")
	}
	rdb := redis.NewClient(&redis.Options{Addr: e2etest.StartPolicyRedis(t, "noeviction").Addr})
	defer rdb.Close()
	ctx := context.Background()
	q := queue.New(rdb)
	if _, err := q.Register(ctx, "dq", "r", []queue.Layout{queue.LayoutOf(queue.Topic{Name: "orders"})}); err != nil {
		t.Fatal(err)
	}
	e2etest.FillRedis(t, ctx, rdb)
	srv, err := console.New(console.Options{Queue: q, Prefix: "dq", Hosts: []string{"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	res, body := f.do("GET", "/", nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, `id="redis-full"`, "Redis is full")
	_, js := f.do("GET", "/api/overview", nil, nil)
	wantContains(t, js, `"full":true`, `"maxmemory_policy":"noeviction"`)
}
