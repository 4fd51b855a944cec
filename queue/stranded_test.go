package queue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStrandedSlotsFindsMessagesBeyondTheSlotCountOnly(t *testing.T) {
	f := newFixture(t, FormatRaw, 4)
	f.tp.Name = "o*[x]?{b}" // every glob character, and braces
	f.zadd(0, 1, "in range")
	f.zadd(5, 1, "a", "b")
	f.zadd(9, 1, "c")
	if err := f.rdb.ZAdd(f.ctx, f.tp.Keys(12).Inflight, redisZ(1, "claimed")).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.ZAdd(f.ctx, f.tp.Keys(20).Dead, redisZ(1, "dead")).Err(); err != nil {
		t.Fatal(err)
	}
	// Keys an unescaped pattern would take for the topic's.
	for _, other := range []string{"o1[x]a{b}", "o*[x]?{b}:1", "o*[x]?{b}x"} {
		o := f.tp
		o.Name = other
		if err := f.rdb.ZAdd(f.ctx, o.Keys(7).Scheduled, redisZ(1, "other")).Err(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := f.q.StrandedSlots(f.ctx, f.tp)
	if err != nil {
		t.Fatal(err)
	}
	want := []StrandedSlot{{Slot: 5, Messages: 2}, {Slot: 9, Messages: 1}, {Slot: 12, Messages: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StrandedSlots (-want +got):\n%s", diff)
	}
	adopted := Topic{Name: "legacy", Prefix: f.tp.Prefix, Key: f.tp.Prefix + ":legacy"}
	if got, err := f.q.StrandedSlots(f.ctx, adopted); err != nil || len(got) != 0 {
		t.Errorf("StrandedSlots(adopted key) = %v, %v; want none", got, err)
	}
}

func TestParseSlotKeyTakesOnlyScheduledInflightPausedAndRecurKeys(t *testing.T) {
	base := "dq:{orders:"
	for key, want := range map[string]int{
		"dq:{orders:3}": 3, "dq:{orders:12}:inflight": 12, "dq:{orders:7}:paused": 7, "dq:{orders:9}:recur": 9,
		"dq:{orders:3}:due": -1, "dq:{orders:3}:dead": -1, "dq:{orders:03}": -1,
		"dq:{orders:1:3}": -1, "dq:{orders:-1}": -1, "dq:{orders:x}": -1, "dq:{other:3}": -1,
	} {
		got, ok := parseSlotKey(key, base)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("parseSlotKey(%q) = %d, want %d", key, got, want)
		}
	}
}
