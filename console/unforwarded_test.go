package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/membership"
)

// TestConsoleSaysNoLiveReplicaForwardsATopic: a live daemon runs orders
// only. The overview names events as forwarded by no one and lists the
// daemon's events as not run; the topic page and a requeue say so too.
func TestConsoleSaysNoLiveReplicaForwardsATopic(t *testing.T) {
	f := newFixture(t, "secret-token-0123456789")
	ctx := context.Background()
	set, err := membership.New(f.q).Heartbeat(ctx, f.prefix, "daemon-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := membership.New(f.q).ReportServed(ctx, f.prefix, "daemon-1", []string{"orders"}, set.Live, time.Minute); err != nil {
		t.Fatal(err)
	}
	const warning = "no live replica forwards events"
	res, body := f.do("GET", "/", nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, warning, "events: not run")
	if strings.Contains(body, "no live replica forwards orders") {
		t.Error("the overview says orders is not forwarded")
	}
	// The state column called events "running"; orders runs.
	if !strings.Contains(rowOf(body, "events"), ">not forwarded<") || strings.Contains(rowOf(body, "events"), "running") {
		t.Errorf("events' row does not say not forwarded:\n%s", rowOf(body, "events"))
	}
	if !strings.Contains(rowOf(body, "orders"), "running") {
		t.Errorf("orders' row does not say running:\n%s", rowOf(body, "orders"))
	}
	res, body = f.do("GET", "/topics/events", nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, `id="unforwarded"`, warning, `id="topic-state">not forwarded<`)
	if _, body = f.do("GET", "/topics/orders", nil, nil); !strings.Contains(body, `id="topic-state">running<`) {
		t.Errorf("orders' page does not say running:\n%s", body)
	}
	f.kill(f.orders, "m1")
	res, body = f.do("POST", "/topics/orders/requeue", url.Values{"confirm": {"yes"}, "all": {"1"}}, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	if strings.Contains(body, "Warning:") {
		t.Errorf("requeue on forwarded orders warns:\n%s", body)
	}
}

// rowOf is the overview's table row of topic, "" when there is none.
func rowOf(body, topic string) string {
	_, row, ok := strings.Cut(body, `<tr data-topic="`+topic+`">`)
	if !ok {
		return ""
	}
	row, _, _ = strings.Cut(row, "</tr>")
	return row
}
