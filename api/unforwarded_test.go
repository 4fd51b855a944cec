package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/membership"
)

// TestScheduleToATopicNoDaemonForwardsWarns: a live daemon runs orders
// only; a message scheduled to legacy is accepted (201) with a warning
// that no live replica forwards it, one and a batch alike; orders has none.
func TestScheduleToATopicNoDaemonForwardsWarns(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	set, err := membership.New(f.q).Heartbeat(ctx, f.prefix, "daemon-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := membership.New(f.q).ReportServed(ctx, f.prefix, "daemon-1", []string{"orders"}, set.Live, time.Minute); err != nil {
		t.Fatal(err)
	}
	r := f.do("POST", "/v1/topics/legacy/messages", fullToken, `{"body":"x","delay":"1s"}`)
	f.want(r, http.StatusCreated, "")
	if w, _ := r.json["warning"].(string); !strings.Contains(w, "no live replica forwards legacy") {
		t.Errorf("answer %v: want a warning that no live replica forwards legacy", r.json)
	}
	r = f.do("POST", "/v1/topics/legacy/messages:batch", fullToken, `{"messages":[{"body":"y","delay":"1s"}]}`)
	f.want(r, http.StatusOK, "")
	if w, _ := r.json["warning"].(string); !strings.Contains(w, "no live replica forwards legacy") {
		t.Errorf("batch answer %v: want the warning", r.json)
	}
	r = f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"a","body":"x","delay":"1h"}`)
	f.want(r, http.StatusCreated, "")
	if _, ok := r.json["warning"]; ok {
		t.Errorf("answer %v: orders is forwarded, no warning", r.json)
	}
}
