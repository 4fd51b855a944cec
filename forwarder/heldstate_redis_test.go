package forwarder

import (
	"context"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/queue"
)

func TestHeldTopicIsReportedWhileHeldAndNotAfter(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	tp := queue.Topic{Name: "campaign", Prefix: prefix, Slots: 2}
	free := queue.Topic{Name: "orders", Prefix: prefix}
	scheduleNow(t, q, tp, 500, "c")
	scheduleNow(t, q, free, 50, "o")
	opt := Options{Queue: q, Topics: []Topic{{Topic: tp, Sink: newRecordSink()}, {Topic: free, Sink: newRecordSink()}},
		KeyPrefix: prefix, AllSlots: true, BatchSize: 10, ReplicaID: "r1", Flow: map[string]Flow{"campaign": {RateLimit: 5}}}
	signal := func(f *Forwarder) { f.heldReports.passed = make(passes, 1) }
	f, stop := startF(t, opt, signal)
	held := func() [][]flowstate.Held {
		t.Helper()
		h, err := flowstate.New(q).HeldOf(context.Background(), []queue.Topic{tp, free})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	isHeld := func() bool {
		h := held()
		return len(h[0]) == 1 && h[0][0].Replica == "r1" && h[0][0].By(flowstate.HeldRate) && !h[0][0].By(flowstate.HeldQueue)
	}
	waitPasses(t, f.heldReports.passed, 5*time.Second, "campaign reported held by the rate limit", isHeld)
	if h := held(); len(h[1]) != 0 || h[0][0].Depth != -1 {
		t.Errorf("reports %+v: want none for the unlimited topic and no depth without a hold queue", h)
	}
	// A replica that stops takes its reports with it.
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if h := held(); len(h[0]) != 0 {
		t.Errorf("reports %+v after the forwarder stopped, want none", h)
	}
	f, _ = startF(t, opt, signal)
	waitPasses(t, f.heldReports.passed, 5*time.Second, "campaign reported held again", isHeld)
	none := 0.0
	if err := flowstate.New(q).SetLimits(context.Background(), tp, flowstate.Override{Rate: &none}); err != nil {
		t.Fatal(err)
	}
	waitPasses(t, f.heldReports.passed, 4*time.Second, "the report gone once the limit is lifted", func() bool { return len(held()[0]) == 0 })
	if n, err := q.Client().Exists(context.Background(), tp.FlowKeys().Held).Result(); err != nil || n != 0 {
		t.Errorf("held key exists (%d, %v) with no report in it", n, err)
	}
}
