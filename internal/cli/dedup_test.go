package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestScheduleCommandSaysADeliveredIDIsADuplicate: once an id was delivered
// on a topic with a dedup window (acked as the forwarder acks), schedule
// says it was delivered already and that nothing was scheduled (and --json
// says duplicate), and writes nothing.
func TestScheduleCommandSaysADeliveredIDIsADuplicate(t *testing.T) {
	e := newCLIEnv(t)
	e.mustRun("", "schedule", "orders", "--id", "paid-7", "v1")
	tp := e.orders
	tp.DedupWindow = time.Hour
	slot := tp.SlotOfID("paid-7")
	c, err := e.q.Claim(e.ctx, tp, slot, 10, time.Minute)
	if err != nil || len(c.Messages) != 1 {
		t.Fatalf("Claim = %d, %v", len(c.Messages), err)
	}
	if _, err := e.q.Ack(e.ctx, tp, slot, []string{c.Messages[0].Member}); err != nil {
		t.Fatal(err)
	}
	out := e.mustRun("", "schedule", "orders", "--in", "1m", "--id", "paid-7", "v2")
	if !strings.Contains(out, "delivered already") || !strings.Contains(out, "nothing was scheduled") {
		t.Errorf("output %q does not say the id was delivered already", out)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(e.mustRun("", "schedule", "orders", "--json", "--id", "paid-7", "v3")), &got); err != nil || got["duplicate"] != true {
		t.Errorf("--json: %v, %v; want duplicate true", got, err)
	}
	// What happened, and nothing that did not: no due time, nothing replaced.
	if got["scheduled"] != false || got["due"] != nil || got["due_ms"] != nil || got["replaced"] != nil {
		t.Errorf("--json of a duplicate: %v; want scheduled false and no due, due_ms or replaced", got)
	}
	if n := e.rdb.ZCard(e.ctx, tp.Keys(slot).Scheduled).Val(); n != 0 {
		t.Errorf("%d scheduled; a duplicate wrote something", n)
	}
}
