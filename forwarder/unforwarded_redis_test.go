package forwarder

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// TestUnforwardedTopicIsReportedAndCounted: a daemon that runs orders only
// reports so with its heartbeat (membership.Forwarding), and counts the due
// messages of a registered topic it does not run (payments) and of one a
// producer scheduled to unregistered (digests, queue.NoteWaiting) in
// delaybridge_unforwarded_due_messages; orders, which it runs, has no
// series. Before, nothing said that payments waited for no one.
func TestUnforwardedTopicIsReportedAndCounted(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	orders := queue.Topic{Name: "orders", Prefix: prefix, Slots: 2}
	payments := queue.Topic{Name: "payments", Prefix: prefix, Slots: 2}
	digests := queue.Topic{Name: "digests", Prefix: prefix, Slots: 1}
	if _, err := q.Register(ctx, prefix, "gone", []queue.Layout{queue.LayoutOf(payments)}); err != nil {
		t.Fatal(err)
	}
	scheduleNow(t, q, payments, 3, "p")
	scheduleNow(t, q, digests, 2, "d")
	if err := q.NoteWaiting(ctx, digests); err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(prometheus.NewRegistry())
	start(t, Options{Queue: q, KeyPrefix: prefix, ReplicaID: "r1", Topics: []Topic{{Topic: orders, Sink: newRecordSink()}},
		Metrics: m, BacklogInterval: 100 * time.Millisecond, unforwardedInterval: 100 * time.Millisecond})
	gauge := func(topic string) float64 { return testutil.ToFloat64(m.Unforwarded.WithLabelValues(topic)) }
	eventually(t, 10*time.Second, "payments 3 and digests 2 unforwarded", func() bool {
		return gauge("payments") == 3 && gauge("digests") == 2
	})
	if n := testutil.CollectAndCount(m.Unforwarded); n != 2 {
		t.Errorf("%d series of delaybridge_unforwarded_due_messages, want 2 (payments, digests; not orders)", n)
	}
	f, err := membership.New(q).Forwarding(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Forwards("r1", "orders") || f.Forwards("r1", "payments") || !f.Unforwarded("payments") || f.Unforwarded("orders") {
		t.Errorf("Forwarding = %+v: r1 must forward orders only", f)
	}
}
