package queue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTopKeysSumsEachKeyOverSlotsAndFollowsTheDrain(t *testing.T) {
	f := newFixture(t, FormatEnvelope, 4)
	f.tp.Fair = true
	at := f.redisNow() - 60_000
	var items []Item
	for _, kc := range []struct {
		key string
		n   int
	}{{"big", 40}, {"mid", 12}, {"two", 2}, {"one", 1}, {"also-two", 2}} {
		items = append(items, fairItems(kc.key, kc.n, at)...)
	}
	f.scheduleItems(items)

	top, entries, err := f.q.TopKeys(f.ctx, f.tp, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []KeyCount{{"big", 40}, {"mid", 12}, {"also-two", 2}}
	if d := cmp.Diff(want, top); d != "" {
		t.Errorf("TopKeys(3) (-want +got):\n%s", d)
	}
	// 40 and 12 messages of a key spread over all 4 slots.
	if entries < 5 || entries > 4+4+2+1+2 {
		t.Errorf("entries %d, want one per key and slot holding it (5…13)", entries)
	}

	// Claimed, a key's count falls; drained, it leaves no trace.
	for slot := range 4 {
		f.claim(slot, 1000, time.Minute)
	}
	top, entries, err = f.q.TopKeys(f.ctx, f.tp, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(top) != 0 || entries != 0 {
		t.Errorf("after the drain: %v, %d entries; want none", top, entries)
	}
}

func TestTopKeysRefusesATopicThatIsNotFair(t *testing.T) {
	f := newFixture(t, FormatEnvelope, 1)
	if _, _, err := f.q.TopKeys(f.ctx, f.tp, 10); err == nil {
		t.Fatal("TopKeys of a plain topic: no error")
	}
}
