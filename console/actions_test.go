package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

var confirmed = url.Values{"confirm": {"yes"}}

func TestActionsAreRefusedWithoutATokenConfigured(t *testing.T) {
	f := newFixture(t, "")
	f.kill(f.orders, "dead")
	for _, name := range []string{"pause", "resume", "requeue", "purge", "cancel", "reschedule"} {
		res, body := f.do("POST", "/topics/orders/"+name, url.Values{"confirm": {"yes"}, "all": {"1"}},
			map[string]string{"Authorization": "Bearer anything"})
		wantStatus(t, res, body, http.StatusForbidden)
		wantContains(t, body, "read-only")
	}
	if f.paused(f.orders) {
		t.Error("a refused pause paused the topic")
	}
	if n, _ := f.q.DeadCount(context.Background(), f.orders); n != 1 {
		t.Errorf("refused requeue/purge changed the dead set: %d dead, want 1", n)
	}
	res, body := f.do("POST", "/login", url.Values{"token": {""}}, nil)
	wantStatus(t, res, body, http.StatusForbidden)
}

func TestActionRefusals(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	cookie, csrf := f.login()
	for _, c := range []struct {
		name   string
		method string
		form   url.Values
		hdr    map[string]string
		want   int
	}{
		{"GET on an action", "GET", nil, f.bearer(), http.StatusMethodNotAllowed},
		{"no credentials", "POST", confirmed, nil, http.StatusUnauthorized},
		{"wrong bearer token", "POST", confirmed, map[string]string{"Authorization": "Bearer wrong"}, http.StatusUnauthorized},
		{"not a bearer header", "POST", confirmed, map[string]string{"Authorization": "Basic czNjcmV0LXRva2Vu"}, http.StatusUnauthorized},
		{"forged cookie", "POST", url.Values{"confirm": {"yes"}, "csrf": {csrf}}, map[string]string{"Cookie": "delaybridge_console=abc.123.deadbeef"}, http.StatusUnauthorized},
		{"session without CSRF token", "POST", confirmed, map[string]string{"Cookie": cookie}, http.StatusForbidden},
		{"session with a wrong CSRF token", "POST", url.Values{"confirm": {"yes"}, "csrf": {"x" + csrf}}, map[string]string{"Cookie": cookie}, http.StatusForbidden},
		{"cross-site fetch", "POST", url.Values{"confirm": {"yes"}, "csrf": {csrf}}, map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"null origin without fetch metadata", "POST", url.Values{"confirm": {"yes"}, "csrf": {csrf}}, map[string]string{"Cookie": cookie, "Origin": "null"}, http.StatusForbidden},
		{"foreign origin", "POST", confirmed, map[string]string{"Authorization": "Bearer s3cret-token", "Origin": "https://evil.example"}, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, body := f.do(c.method, "/topics/orders/pause", c.form, c.hdr)
			wantStatus(t, res, body, c.want)
			if f.paused(f.orders) {
				t.Fatal("a refused request paused the topic")
			}
		})
	}
	res, body := f.do("POST", "/login", url.Values{"token": {"wrong"}}, nil)
	wantStatus(t, res, body, http.StatusUnauthorized)
}

// login logs in with the form and returns the cookie header and the CSRF
// token of the session, read from a page's hidden field.
func (f *fixture) login() (cookie, csrf string) {
	f.t.Helper()
	res, body := f.do("POST", "/login", url.Values{"token": {f.token}}, map[string]string{"Origin": "http://example.com"})
	wantStatus(f.t, res, body, http.StatusSeeOther)
	c := res.Cookies()
	if len(c) != 1 || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode || c[0].Secure {
		f.t.Fatalf("login cookie %+v: want one HttpOnly, SameSite=Strict cookie (not Secure over plain HTTP)", c)
	}
	if strings.Contains(c[0].Value, f.token) {
		f.t.Fatal("the session cookie holds the token")
	}
	cookie = c[0].Name + "=" + c[0].Value
	_, body = f.do("GET", "/topics/orders", nil, map[string]string{"Cookie": cookie})
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	if m == nil {
		f.t.Fatalf("no CSRF field on the topic page after login:\n%s", body)
	}
	return cookie, m[1]
}

func TestPauseAsksFirstThenPausesAndResumes(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	cookie, csrf := f.login()
	session := map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "same-origin", "Origin": "http://example.com"}
	res, body := f.do("POST", "/topics/orders/pause", url.Values{"csrf": {csrf}, "reason": {"maintenance"}}, session)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "Confirm: pause", `name="confirm" value="yes"`, `name="reason" value="maintenance"`)
	if f.paused(f.orders) {
		t.Fatal("the confirmation step paused the topic")
	}
	res, body = f.do("POST", "/topics/orders/pause", url.Values{"csrf": {csrf}, "reason": {"maintenance"}, "confirm": {"yes"}}, session)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "Paused orders (2 slots)")
	if !f.paused(f.orders) {
		t.Fatal("not paused")
	}
	c, err := f.q.Claim(context.Background(), f.orders, 0, 10, time.Minute)
	if err != nil || !c.Paused || len(c.Messages) != 0 {
		t.Fatalf("claim of a paused topic = %+v, %v", c, err)
	}
	_, body = f.do("GET", "/", nil, nil)
	wantContains(t, body, `class="paused"`, "maintenance")
	res, body = f.do("POST", "/topics/orders/resume", confirmed, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "Resumed orders (2 of 2 slots were paused)")
	if f.paused(f.orders) {
		t.Fatal("still paused")
	}
}

func TestRequeueAndPurgeDeadMessages(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	a := f.kill(f.orders, "dead-a")
	f.kill(f.orders, "dead-b")
	f.kill(f.orders, "dead-c")
	one := url.Values{"slot": {itoa(a.Slot)}, "mid": {a.ID}}
	res, body := f.do("POST", "/topics/orders/requeue", one, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "Requeue dead message "+a.ID)
	one.Set("confirm", "yes")
	res, body = f.do("POST", "/topics/orders/requeue", one, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "Requeued 1")
	e, _ := f.q.Inspect(context.Background(), f.orders, []byte("dead-a"))
	if e.State != "scheduled" {
		t.Fatalf("requeued message is %s, want scheduled", e.State)
	}
	res, body = f.do("POST", "/topics/orders/requeue", one, f.bearer())
	wantStatus(t, res, body, http.StatusBadRequest) // not dead any more

	res, body = f.do("POST", "/topics/orders/purge", url.Values{"all": {"1"}}, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "all 2 dead messages of orders")
	res, body = f.do("POST", "/topics/orders/purge", url.Values{"all": {"1"}, "confirm": {"yes"}}, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "Purged 2")
	if n, _ := f.q.DeadCount(context.Background(), f.orders); n != 0 {
		t.Errorf("%d dead after purge all", n)
	}
}

func TestCancelAndRescheduleByEnvelopeID(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	ctx := context.Background()
	for _, id := range []string{"e1", "e2"} {
		if _, err := f.q.Schedule(ctx, f.events, queue.Message{ID: id, Body: []byte("x")}, queue.In(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	res, body := f.do("POST", "/topics/events/reschedule", url.Values{"id": {"e1"}, "at": {"2031-01-02T03:04"}, "confirm": {"yes"}}, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "now due 2031-01-02 03:04:00.000 UTC")
	in, err := f.q.Get(ctx, f.events, "e1")
	if err != nil || !in.Due.Equal(time.Date(2031, 1, 2, 3, 4, 0, 0, time.UTC)) {
		t.Fatalf("after reschedule: %+v, %v", in, err)
	}
	res, body = f.do("POST", "/topics/events/reschedule", url.Values{"id": {"e1"}, "in": {"soon"}, "confirm": {"yes"}}, f.bearer())
	wantStatus(t, res, body, http.StatusBadRequest)
	res, body = f.do("POST", "/topics/events/cancel", url.Values{"id": {"e2"}, "confirm": {"yes"}}, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "Cancelled the message with id &#34;e2&#34;")
	res, body = f.do("POST", "/topics/events/cancel", url.Values{"id": {"e2"}, "confirm": {"yes"}}, f.bearer())
	wantStatus(t, res, body, http.StatusNotFound)
	res, body = f.do("POST", "/topics/orders/cancel", url.Values{"id": {"e2"}, "confirm": {"yes"}}, f.bearer())
	wantStatus(t, res, body, http.StatusBadRequest) // raw topic: no ids
}
