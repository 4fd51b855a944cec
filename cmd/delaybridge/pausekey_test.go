package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// TestPauseKeyHoldsOneKeyAndStatsListsIt: pause --key on a fair topic holds
// that key's due messages (every slot), the others are claimed; stats and
// stats --json list the paused key; resume --key lets it go; pause --key on
// a topic without fair share exits 2 naming the variable.
func TestPauseKeyHoldsOneKeyAndStatsListsIt(t *testing.T) {
	e := newFairCLIEnv(t)
	var items []queue.Item
	for _, k := range []string{"acme", "globex"} {
		items = append(items, queue.Item{Message: queue.Message{ID: k + "-1", Key: k, Body: []byte("x")}, When: queue.In(-time.Second)})
	}
	rs, err := e.q.ScheduleBatch(e.ctx, e.orders, items)
	if err != nil {
		t.Fatal(err)
	}
	if out := e.mustRun("", "pause", "orders", "--key", "acme"); !strings.Contains(out, `paused key "acme" of orders`) {
		t.Errorf("pause --key printed %q", out)
	}
	claimed := func() map[string]bool {
		got := map[string]bool{}
		for _, r := range rs {
			c, err := e.q.Claim(e.ctx, e.orders, r.Slot, 10, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range c.Messages {
				d, _ := e.orders.Decode(m.Member)
				got[d.Key] = true
			}
		}
		return got
	}
	if got := claimed(); got["acme"] || !got["globex"] {
		t.Errorf("claimed keys %v while acme is paused, want globex only", got)
	}
	if out := e.mustRun("", "stats", "orders"); !strings.Contains(out, "paused keys of orders") || !strings.Contains(out, "acme") {
		t.Errorf("stats does not list the paused key:\n%s", out)
	}
	var st struct {
		Topics []struct {
			PausedKeys []struct{ Key, Since string } `json:"paused_keys"`
		}
	}
	if err := json.Unmarshal([]byte(e.mustRun("", "stats", "--json", "orders")), &st); err != nil || len(st.Topics) != 1 ||
		len(st.Topics[0].PausedKeys) != 1 || st.Topics[0].PausedKeys[0].Key != "acme" || st.Topics[0].PausedKeys[0].Since == "" {
		t.Errorf("stats --json paused keys = %+v (%v)", st, err)
	}
	if out := e.mustRun("", "resume", "orders", "--key", "acme"); !strings.Contains(out, `resumed key "acme"`) {
		t.Errorf("resume --key printed %q", out)
	}
	if got := claimed(); !got["acme"] {
		t.Errorf("claimed keys %v after resume --key, want acme", got)
	}
	if out := e.mustRun("", "resume", "orders", "--key", "acme"); !strings.Contains(out, "was not paused") {
		t.Errorf("second resume --key printed %q", out)
	}
	code, _, errs := e.run("", "pause", "legacy", "--key", "acme")
	if code != exitConfig || !strings.Contains(errs, "_FAIR=true") {
		t.Errorf("pause --key on a topic without fair share: exit %d, stderr %q; want 2 naming the variable", code, errs)
	}
	code, _, errs = e.run("", "pause", "orders", "--key", "acme", "--reason", "x")
	if code != exitConfig || !strings.Contains(errs, "--reason") {
		t.Errorf("pause --key --reason: exit %d, stderr %q; want 2", code, errs)
	}
}
