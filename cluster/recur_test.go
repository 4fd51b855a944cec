package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// Recurrences on a real Redis Cluster: set, tick, settle, list, count and
// remove on every slot of a topic, without a CROSSSLOT error; each
// recurrence's tick and HASH share its slot's hash tag.
func TestRecurrencesOnARedisClusterStayInTheirSlot(t *testing.T) {
	t.Parallel()
	prefix := e2etest.Unique(t)
	b := redisCluster(t, prefix)
	q := queue.New(b.rdb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topic := queue.Topic{Name: "recurring", Prefix: prefix, Slots: 8}
	const n = 32
	for i := range n {
		r := queue.Recurrence{ID: fmt.Sprintf("rec-%d", i), Spec: "@every 1s", Zone: "Europe/Berlin",
			Message: queue.Message{Body: []byte("tick"), Headers: map[string]string{"n": fmt.Sprint(i)}}}
		if _, err := q.SetRecurrence(ctx, topic, r); err != nil {
			t.Fatalf("set %s: %v", r.ID, err)
		}
	}
	time.Sleep(2100 * time.Millisecond) // every first tick falls due
	settled := 0
	for slot := range topic.SlotCount() {
		c, err := q.Claim(ctx, topic, slot, 100, time.Minute)
		if err != nil {
			t.Fatalf("claim slot %d: %v", slot, err)
		}
		var ms []string
		for _, m := range c.Messages {
			ms = append(ms, m.Member)
		}
		st, err := q.SettleTicks(ctx, topic, slot, ms, true, time.Time{}) // as if on time: no tick skipped
		if err != nil {
			t.Fatalf("settle slot %d: %v", slot, err)
		}
		settled += st.Advanced
	}
	if settled != n {
		t.Errorf("%d ticks settled with a successor, want %d", settled, n)
	}
	rs, err := q.Recurrences(ctx, topic)
	if err != nil || len(rs) != n {
		t.Fatalf("Recurrences = %d, %v; want %d", len(rs), err, n)
	}
	var total int64
	for _, r := range rs {
		if r.Last.IsZero() || !r.Next.Equal(r.Last.Add(time.Second)) {
			t.Errorf("%s: last %s, next %s: want the next a second after the last", r.ID, r.Last, r.Next)
		}
		st, err := q.Stats(ctx, topic, r.Slot)
		if err != nil {
			t.Fatal(err)
		}
		total += st.Recurring
	}
	for i := range n {
		if ok, err := q.RemoveRecurrence(ctx, topic, fmt.Sprintf("rec-%d", i)); !ok || err != nil {
			t.Fatalf("remove rec-%d: %v, %v", i, ok, err)
		}
	}
	if left, err := q.RecurrenceCount(ctx, topic); err != nil || left != 0 {
		t.Errorf("RecurrenceCount after removing all = %d, %v", left, err)
	}
	if total < n {
		t.Errorf("stats counted %d recurrences, want at least %d", total, n)
	}
}
