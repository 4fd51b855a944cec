package queue

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// docScript returns the Lua block of docs/producers.md whose first line is
// "-- <name>: …", so the scripts other languages copy are the ones tested.
func docScript(t *testing.T, name string) *redis.Script {
	t.Helper()
	doc, err := os.ReadFile("../docs/producers.md")
	if err != nil {
		t.Fatalf("read docs: %v", err)
	}
	for _, block := range strings.Split(string(doc), "```lua\n")[1:] {
		if strings.HasPrefix(block, "-- "+name+":") {
			return redis.NewScript(block[:strings.Index(block, "```")])
		}
	}
	t.Fatalf("docs/producers.md has no Lua block starting -- %s:", name)
	return nil
}

func TestProducersDocScriptsKeepTheIDsIndex(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 8)
	schedule, cancel := docScript(t, "schedule.lua"), docScript(t, "cancel.lua")
	slot := f.tp.SlotOfID("order-42")
	k := f.tp.Keys(slot)
	keys := []string{k.Scheduled, k.Inflight, k.Due, k.Attempts, k.IDs}
	now := f.redisNow()

	// The envelope the doc's Python writes: json.dumps puts spaces in.
	v1 := `{"id": "order-42", "body": {"order": 42}, "headers": {"tenant": "eu-1"}, "routing_key": "orders.eu"}`
	v2 := `{"id": "order-42", "body": "v2"}`
	for _, m := range []string{v1, v2} {
		if err := schedule.Run(f.ctx, f.rdb, keys, m, "order-42", now-1000).Err(); err != nil {
			t.Fatalf("schedule.lua: %v", err)
		}
	}
	if n := f.zcard(k.Scheduled); n != 1 {
		t.Errorf("%d scheduled after the same id twice, want 1", n)
	}
	f.checkIndex()
	c := f.claim(slot, 10, time.Minute)
	if len(c.Messages) != 1 || c.Messages[0].Member != v2 {
		t.Fatalf("claimed %v, want v2", members(c))
	}
	if m, err := f.tp.Decode(v1); err != nil || string(m.Body) != `{"order": 42}` || m.RoutingKey != "orders.eu" {
		t.Errorf("the doc's envelope decodes to %+v, %v", m, err)
	}

	if n, _ := cancel.Run(f.ctx, f.rdb, keys, "order-42").Int(); n != 2 {
		t.Errorf("cancel.lua of a claimed message = %d, want 2 (in flight)", n)
	}
	// Scheduling the id again supersedes the delivery under way.
	schedule.Run(f.ctx, f.rdb, keys, v1, "order-42", now+60_000)
	if out, _ := f.q.Retry(f.ctx, f.tp, slot, Failure{Member: v2, Backoff: time.Millisecond}, 5); out != NotInflight {
		t.Errorf("Retry of the superseded delivery = %v", out)
	}
	f.checkIndex()
	if n, _ := cancel.Run(f.ctx, f.rdb, keys, "order-42").Int(); n != 1 {
		t.Errorf("cancel.lua = %d, want 1", n)
	}
	if n, _ := cancel.Run(f.ctx, f.rdb, keys, "order-42").Int(); n != 0 {
		t.Errorf("second cancel.lua = %d, want 0", n)
	}
	f.checkIndex()
	if n := f.zcard(k.Scheduled) + f.zcard(k.Inflight); n != 0 {
		t.Errorf("%d messages left", n)
	}
}
