package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

func TestRescheduleCommandMovesAMessageByIDOrMember(t *testing.T) {
	e := newCLIEnv(t)
	e.mustRun("", "schedule", "orders", "--in", "1h", "--id", "a", "x")
	out := e.mustRun("", "reschedule", "orders", "--id", "a", "--at", "2031-03-01T00:00:00Z")
	if !strings.Contains(out, "rescheduled a on orders") || !strings.Contains(out, "2031-03-01T00:00:00.000Z") {
		t.Errorf("output %q", out)
	}
	info, _ := e.q.Get(e.ctx, e.orders, "a")
	if info.Due.UTC().Format(time.RFC3339) != "2031-03-01T00:00:00Z" {
		t.Errorf("due %v", info.Due)
	}

	e.mustRun("", "schedule", "legacy", "--in", "1h", "m")
	out = e.mustRun("", "reschedule", "legacy", "m", "--in", "2h", "--json")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || res["result"] != "rescheduled" {
		t.Fatalf("JSON %q: %v", out, err)
	}
	s, _ := e.rdb.ZScore(e.ctx, e.legacy.Keys(0).Scheduled, "m").Result()
	if d := time.Until(time.UnixMilli(int64(s))); d < 119*time.Minute || d > 121*time.Minute {
		t.Errorf("due in %v, want 2h", d)
	}
}

func TestRescheduleCommandOfAClaimedOrUnknownMessageExits1(t *testing.T) {
	e := newCLIEnv(t)
	r, _ := e.q.Schedule(e.ctx, e.orders, queue.Message{ID: "a", Body: []byte("x")}, queue.In(-time.Second))
	e.q.Claim(e.ctx, e.orders, r.Slot, 10, time.Minute)
	if code, out, _ := e.run("", "reschedule", "orders", "--id", "a", "--in", "1h"); code != exitFail || !strings.Contains(out, "in flight") {
		t.Errorf("in flight: exit %d, %q", code, out)
	}
	if info, _ := e.q.Get(e.ctx, e.orders, "a"); info.State != queue.StateInFlight {
		t.Errorf("state %v", info.State)
	}
	if code, out, _ := e.run("", "reschedule", "orders", "--id", "nope", "--in", "1h"); code != exitFail || !strings.Contains(out, "no scheduled") {
		t.Errorf("unknown: exit %d, %q", code, out)
	}
	if code, _, errs := e.run("", "reschedule", "orders", "--id", "a"); code != exitConfig || !strings.Contains(errs, "--at or --in") {
		t.Errorf("no time: exit %d, %q", code, errs)
	}
}
