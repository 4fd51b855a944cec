package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/console"
	"github.com/delaybridge/delaybridge/flowstate"
)

func TestLimitAsksFirstThenSetsAndClearsTheRunTimeLimits(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	cookie, csrf := f.login()
	session := map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "same-origin", "Origin": "http://example.com"}
	ctx := context.Background()
	_, body := f.do("GET", "/topics/orders", nil, session)
	wantContains(t, body, `action="/topics/orders/limit"`, `name="rate"`, `name="hold_above"`, "No limits")
	res, body := f.do("POST", "/topics/orders/limit", url.Values{"csrf": {csrf}, "rate": {"300"}, "hold_above": {"none"}}, session)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "Confirm: limit", "Set rate limit 300/s, no hold on orders", `name="rate" value="300"`, `name="confirm" value="yes"`)
	if o, err := flowstate.New(f.q).Limits(ctx, f.orders); err != nil || !o.IsZero() {
		t.Fatalf("limits after the confirmation step = %+v, %v; want none", o, err)
	}
	res, body = f.do("POST", "/topics/orders/limit", url.Values{"csrf": {csrf}, "rate": {"300"}, "hold_above": {"none"}, "confirm": {"yes"}}, session)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "Set rate limit 300/s, no hold on orders")
	if o, err := flowstate.New(f.q).Limits(ctx, f.orders); err != nil || o.Rate == nil || *o.Rate != 300 || o.HoldAbove == nil || *o.HoldAbove != -1 {
		t.Fatalf("stored limits = %+v, %v; want rate 300, no hold", o, err)
	}
	_, body = f.do("GET", "/topics/orders", nil, session)
	wantContains(t, body, "rate limit 300/s (run time)", `id="limit-off"`, "not held")
	_, body = f.do("GET", "/", nil, nil)
	wantContains(t, body, "rate limit 300/s (run time)")
	for _, bad := range []url.Values{{"rate": {"fast"}}, {"hold_above": {"-2"}}, {}, {"off": {"1"}, "rate": {"5"}}} {
		bad.Set("confirm", "yes")
		res, body = f.do("POST", "/topics/orders/limit", bad, f.bearer())
		wantStatus(t, res, body, http.StatusBadRequest)
	}
	res, body = f.do("POST", "/topics/orders/limit", url.Values{"off": {"1"}, "confirm": {"yes"}}, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "Cleared the limits of orders set at run time")
	if o, err := flowstate.New(f.q).Limits(ctx, f.orders); err != nil || !o.IsZero() {
		t.Errorf("limits after clearing = %+v, %v; want none", o, err)
	}
}

func TestLimitIsRefusedWithoutTheToken(t *testing.T) {
	ro := newFixture(t, "")
	res, body := ro.do("POST", "/topics/orders/limit", url.Values{"rate": {"5"}, "confirm": {"yes"}}, map[string]string{"Authorization": "Bearer anything"})
	wantStatus(t, res, body, http.StatusForbidden)
	f := newFixture(t, "s3cret-token")
	cookie, csrf := f.login()
	for _, c := range []struct {
		name string
		form url.Values
		hdr  map[string]string
		want int
	}{
		{"no credentials", url.Values{}, nil, http.StatusUnauthorized},
		{"wrong bearer token", url.Values{}, map[string]string{"Authorization": "Bearer wrong"}, http.StatusUnauthorized},
		{"session without CSRF token", url.Values{}, map[string]string{"Cookie": cookie}, http.StatusForbidden},
		{"session with a wrong CSRF token", url.Values{"csrf": {"x" + csrf}}, map[string]string{"Cookie": cookie}, http.StatusForbidden},
	} {
		c.form.Set("rate", "5")
		c.form.Set("confirm", "yes")
		res, body := f.do("POST", "/topics/orders/limit", c.form, c.hdr)
		if res.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d; body:\n%s", c.name, res.StatusCode, c.want, body)
		}
	}
	for _, fx := range []*fixture{ro, f} {
		if o, err := flowstate.New(fx.q).Limits(context.Background(), fx.orders); err != nil || !o.IsZero() {
			t.Errorf("a refused limit changed the limits: %+v, %v", o, err)
		}
	}
	_, body = ro.do("GET", "/topics/orders", nil, nil)
	if want := `action="/topics/orders/limit"`; contains(body, want) {
		t.Errorf("the read-only topic page offers the limit form")
	}
}

// The console shows what the replicas report: the environment's limits,
// and a topic held by hold-above with the queue's depth, until the report
// is gone.
func TestConsoleShowsTheLimitsInForceAndAHeldTopic(t *testing.T) {
	f := newFixture(t, "")
	srv, err := console.New(console.Options{Queue: f.q, Prefix: f.prefix, Hosts: []string{"example.com"},
		Limits: map[string]flowstate.Limits{"orders": flowstate.EnvLimits(0, "orders-work", 1000)}})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	ctx := context.Background()
	// No daemon reports orders' limits yet: the console's own environment
	// stands in, and says so.
	_, body := f.do("GET", "/topics/orders", nil, nil)
	wantContains(t, body, "holds while orders-work has more than 1000 ready (environment here: no live daemon reports its own)")
	// The daemons report theirs: two run orders with hold-above 1000, one
	// with 500 (a replica restarted with another setting).
	for id, above := range map[string]int{"replica-1": 1000, "replica-2": 1000, "replica-3": 500} {
		env := flowstate.EnvLimits(0, "orders-work", above)
		if err := flowstate.New(f.q).ReportEnv(ctx, f.orders, id, &env, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := flowstate.New(f.q).ReportHeld(ctx, f.orders, "replica-1", &flowstate.Held{Reasons: []string{flowstate.HeldQueue}, Depth: 1234}, time.Minute); err != nil {
		t.Fatal(err)
	}
	differ := "holds while orders-work has more than 1000 ready on 2 replicas (replica-1, replica-2); " +
		"holds while orders-work has more than 500 ready on 1 replica (replica-3) (environment)"
	_, body = f.do("GET", "/topics/orders", nil, nil)
	wantContains(t, body, differ, "held by hold-above (orders-work: 1234 ready)")
	_, body = f.do("GET", "/overview/live", nil, nil)
	wantContains(t, body, "held by hold-above (orders-work: 1234 ready)", differ)
	var ov struct {
		Topics []struct {
			Name string `json:"name"`
			Flow struct {
				Limits    flowstate.Limits `json:"limits"`
				Held      bool             `json:"held"`
				HeldBy    []string         `json:"held_by"`
				HoldDepth int              `json:"hold_queue_depth"`
			} `json:"flow"`
		} `json:"topics"`
	}
	_, body = f.do("GET", "/api/overview", nil, nil)
	if err := json.Unmarshal([]byte(body), &ov); err != nil {
		t.Fatal(err)
	}
	for _, tp := range ov.Topics {
		fl := tp.Flow
		switch tp.Name {
		case "orders":
			if !fl.Held || len(fl.HeldBy) != 1 || fl.HeldBy[0] != "queue" || fl.HoldDepth != 1234 || fl.Limits.HoldAbove != 1000 ||
				len(fl.Limits.Groups) != 2 || len(fl.Limits.Replicas) != 3 {
				t.Errorf("orders' flow = %+v, want held by the queue at 1234, hold above 1000 on two replicas and 500 on one", fl)
			}
		case "events":
			if fl.Held || fl.Limits.Rate != 0 || fl.Limits.HoldAbove != -1 {
				t.Errorf("events' flow = %+v, want no limits, not held", fl)
			}
		}
	}
	if err := flowstate.New(f.q).ReportHeld(ctx, f.orders, "replica-1", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	_, body = f.do("GET", "/topics/orders", nil, nil)
	wantContains(t, body, "not held")
}
