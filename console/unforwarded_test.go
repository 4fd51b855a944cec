package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestConsoleSaysNoLiveReplicaForwardsATopic: a live daemon runs orders
// only. The overview names events as forwarded by no one and lists the
// daemon's events as not run; the topic page and a requeue say so too.
func TestConsoleSaysNoLiveReplicaForwardsATopic(t *testing.T) {
	f := newFixture(t, "secret-token-0123456789")
	ctx := context.Background()
	set, err := f.q.Heartbeat(ctx, f.prefix, "daemon-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.q.ReportServed(ctx, f.prefix, "daemon-1", []string{"orders"}, set.Live, time.Minute); err != nil {
		t.Fatal(err)
	}
	const warning = "no live replica forwards events"
	res, body := f.do("GET", "/", nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, warning, "events: not run")
	if strings.Contains(body, "no live replica forwards orders") {
		t.Error("the overview says orders is not forwarded")
	}
	res, body = f.do("GET", "/topics/events", nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, `id="unforwarded"`, warning)
	f.kill(f.orders, "m1")
	res, body = f.do("POST", "/topics/orders/requeue", url.Values{"confirm": {"yes"}, "all": {"1"}}, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	if strings.Contains(body, "Warning:") {
		t.Errorf("requeue on forwarded orders warns:\n%s", body)
	}
}
