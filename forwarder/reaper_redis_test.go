package forwarder

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/delaybridge/delaybridge/queue"
)

// TestReaperPassReturnsAnExpiredLeaseOfAnAcquiredSlot: a slot acquired is
// due for a reap at once, and one pass returns a lease that expired there
// (a claimer that died) and schedules the slot's next reap; a second pass
// right after finds nothing due.
func TestReaperPassReturnsAnExpiredLeaseOfAnAcquiredSlot(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	tp := queue.Topic{Name: "reaped", Prefix: prefix}
	m := NewMetrics(prometheus.NewRegistry())
	f, err := New(Options{Queue: q, Topics: []Topic{{Topic: tp, Sink: newRecordSink()}}, KeyPrefix: prefix, AllSlots: true, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := q.ScheduleMember(ctx, tp, []byte("m"), queue.In(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if c, err := q.ClaimAhead(ctx, tp, 0, 10, 10*time.Millisecond, 0); err != nil || len(c.Messages) != 1 {
		t.Fatalf("claim: %v, %d messages", err, len(c.Messages))
	}
	time.Sleep(50 * time.Millisecond) // the lease expires: its claimer is gone
	f.reaps.acquire(slotKey{})
	if p := f.reaper.runOnce(ctx); p.done != 1 {
		t.Fatalf("the pass reaped %d slots, want the slot just acquired", p.done)
	}
	if n := testutil.ToFloat64(m.Reaped.WithLabelValues("reaped")); n != 1 {
		t.Errorf("reaped_total %v, want 1", n)
	}
	if n, err := q.Client().ZCard(ctx, tp.Keys(0).Scheduled).Result(); err != nil || n != 1 {
		t.Errorf("scheduled set holds %d (%v), want the returned message", n, err)
	}
	if p := f.reaper.runOnce(ctx); p.done != 0 || !p.next.After(time.Now()) {
		t.Errorf("second pass reaped %d slots, next at %v; want nothing due until later", p.done, p.next)
	}
}
