package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// TestStatsShowsTheRememberedDedupIDs: once messages of a topic with a
// dedup window are acked, stats says how many ids it remembers, below the
// table and as dedup_ids in --json. Before, they showed nowhere.
func TestStatsShowsTheRememberedDedupIDs(t *testing.T) {
	e := newCLIEnv(t)
	tp := e.orders
	tp.DedupWindow = time.Hour
	for _, id := range []string{"a", "b", "c"} {
		if _, err := e.q.Schedule(e.ctx, tp, queue.Message{ID: id, Body: []byte("x")}, queue.In(-time.Second)); err != nil {
			t.Fatal(err)
		}
		slot := tp.SlotOfID(id)
		c, err := e.q.Claim(e.ctx, tp, slot, 10, time.Minute)
		if err != nil || len(c.Messages) != 1 {
			t.Fatalf("claim %s: %d, %v", id, len(c.Messages), err)
		}
		if n, err := e.q.Ack(e.ctx, tp, slot, []string{c.Messages[0].Member}); err != nil || n != 1 {
			t.Fatalf("ack %s: %d, %v", id, n, err)
		}
	}
	if out := e.mustRun("", "stats"); !strings.Contains(out, "dedup ids remembered (DEDUP_WINDOW): orders 3") {
		t.Errorf("stats does not show the 3 remembered ids:\n%s", out)
	}
	var res struct {
		Topics []struct {
			Total struct {
				DedupIDs int64 `json:"dedup_ids"`
			}
		}
	}
	out := e.mustRun("", "stats", "--json", "orders")
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Topics) != 1 || res.Topics[0].Total.DedupIDs != 3 {
		t.Errorf("stats --json: dedup_ids not 3 (%v):\n%s", err, out)
	}
}
