package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delaybridge/delaybridge/queue"
)

func TestCancelCommandByIDCancelsAScheduledMessage(t *testing.T) {
	e := newCLIEnv(t)
	e.mustRun("", "schedule", "orders", "--in", "1h", "--id", "order-42", "x")
	out := e.mustRun("", "cancel", "orders", "--id", "order-42")
	if !strings.Contains(out, "cancelled id order-42 on orders") {
		t.Errorf("output %q", out)
	}
	if _, err := e.q.Get(e.ctx, e.orders, "order-42"); err == nil {
		t.Error("the message is still there")
	}
	code, out, _ := e.run("", "cancel", "orders", "--id", "order-42", "--json")
	var res map[string]string
	json.Unmarshal([]byte(out), &res)
	if code != exitFail || res["result"] != "not-found" {
		t.Errorf("second cancel: exit %d, %q", code, out)
	}
}

func TestCancelCommandByIDOfAClaimedMessageReportsInFlightAndChangesNothing(t *testing.T) {
	e := newCLIEnv(t)
	r, err := e.q.Schedule(e.ctx, e.orders, queue.Message{ID: "order-7", Body: []byte("x")}, queue.In(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.Claim(e.ctx, e.orders, r.Slot, 10, time.Minute); err != nil {
		t.Fatal(err)
	}
	before, _ := e.q.Get(e.ctx, e.orders, "order-7")
	code, out, _ := e.run("", "cancel", "orders", "--id", "order-7")
	if code != exitFail || !strings.Contains(out, "in flight") {
		t.Errorf("exit %d, %q; want 1 and in flight", code, out)
	}
	after, err := e.q.Get(e.ctx, e.orders, "order-7")
	if err != nil || after.State != queue.StateInFlight {
		t.Fatalf("Get after = %+v, %v", after, err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("message changed (-before +after):\n%s", diff)
	}
}

func TestCancelCommandByMemberOnARawTopicReadsStdin(t *testing.T) {
	e := newCLIEnv(t)
	e.mustRun("", "schedule", "legacy", "--in", "1h", "line one\nline two")
	e.mustRun("line one\nline two", "cancel", "legacy", "-")
	if n, _ := e.rdb.ZCard(e.ctx, e.legacy.Keys(0).Scheduled).Result(); n != 0 {
		t.Errorf("%d still scheduled", n)
	}
	if code, _, errs := e.run("", "cancel", "legacy"); code != exitConfig || !strings.Contains(errs, "--id, --member or --member-file") {
		t.Errorf("cancel without member: exit %d, %q", code, errs)
	}
	if code, _, errs := e.run("", "cancel", "legacy", "--id", "x"); code != exitFail || !strings.Contains(errs, "--member or --member-file") {
		t.Errorf("cancel by an unknown id on raw topic: exit %d, %q", code, errs)
	}
}
