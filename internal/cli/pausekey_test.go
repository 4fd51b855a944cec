package cli

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

// TestLimitKeySetsOneKeysRateAndStatsShowsIt: limit --key --rate sets one
// key's rate on a fair topic (every slot), stats shows it beside the
// topic's KEY_RATE_LIMIT, --rate none lifts it for the key, --off returns
// the key to the topic's; --hold-above with --key is a usage error.
func TestLimitKeySetsOneKeysRateAndStatsShowsIt(t *testing.T) {
	e := newFairCLIEnv(t)
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_KEY_RATE_LIMIT", "20")
	if out := e.mustRun("", "limit", "orders", "--key", "acme", "--rate", "5"); !strings.Contains(out, `key "acme": rate limit 5/s`) {
		t.Errorf("limit --key --rate printed %q", out)
	}
	for s := range e.orders.SlotCount() {
		if v, err := e.rdb.HGet(e.ctx, e.orders.Keys(s).FairLimits, "r:acme").Result(); err != nil || v != "5" {
			t.Errorf("slot %d holds rate %q (%v), want 5", s, v, err)
		}
	}
	out := e.mustRun("", "stats", "orders")
	if !strings.Contains(out, "key rate limits of orders: each key 20/s, acme 5/s") {
		t.Errorf("stats does not show the key rates:\n%s", out)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(e.mustRun("", "limit", "orders", "--key", "acme", "--rate", "none", "--json")), &res); err != nil || res["rate"] != "none" {
		t.Errorf("limit --key --rate none --json = %v (%v)", res, err)
	}
	if out := e.mustRun("", "limit", "orders", "--key", "acme", "--off"); !strings.Contains(out, "no rate set at run time") {
		t.Errorf("limit --key --off printed %q", out)
	}
	if rates, err := e.q.KeyRates(e.ctx, e.orders); err != nil || len(rates) != 0 {
		t.Errorf("KeyRates after --off = %+v, %v", rates, err)
	}
	code, _, errs := e.run("", "limit", "orders", "--key", "acme", "--hold-above", "5")
	if code != exitConfig || !strings.Contains(errs, "--hold-above") {
		t.Errorf("limit --key --hold-above: exit %d, stderr %q; want 2", code, errs)
	}
	code, _, errs = e.run("", "limit", "legacy", "--key", "acme", "--rate", "5")
	if code != exitConfig || !strings.Contains(errs, "_FAIR=true") {
		t.Errorf("limit --key on a topic without fair share: exit %d, stderr %q; want 2", code, errs)
	}
}
