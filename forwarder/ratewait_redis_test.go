package forwarder

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestTinyRateLiftedAtRunTimeWakesTheWaitingSlot: a topic at the lowest
// rate accepted (flowstate.MinRate, one delivery per 1,000 s) waits for
// permits; lifting the limit at run time (delaybridge limit --rate none)
// must deliver the rest within the limits check, not after the old
// limit's wait. At 1e-9/s the slot slept 31 years and `limit --off` did not
// wake it.
func TestTinyRateLiftedAtRunTimeWakesTheWaitingSlot(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	q := queue.New(rdb)
	tp := queue.Topic{Name: "trickle", Prefix: prefix}
	scheduleNow(t, q, tp, 50, "m")
	sink := newRecordSink()
	start(t, Options{Queue: q, Topics: []Topic{{Topic: tp, Sink: sink}}, KeyPrefix: prefix, AllSlots: true, BatchSize: 10,
		Metrics: NewMetrics(prometheus.NewRegistry()), Flow: map[string]Flow{"trickle": {RateLimit: flowstate.MinRate}}})
	time.Sleep(time.Second) // the bucket's first permits go, then the slot waits
	if n := len(sink.published()); n >= 50 {
		t.Fatalf("%d of 50 delivered at %g/s", n, flowstate.MinRate)
	}
	none := 0.0
	lifted := time.Now()
	if err := flowstate.New(q).SetLimits(context.Background(), tp, flowstate.Override{Rate: &none}); err != nil {
		t.Fatal(err)
	}
	defer flowstate.New(q).ClearLimits(context.Background(), tp)
	eventually(t, 10*time.Second, "every message delivered once the limit is lifted", func() bool { return len(sink.published()) == 50 })
	took := sink.published()[49].at.Sub(lifted)
	t.Logf("the last of 50 came %s after the limit was lifted", took)
	// The limits are read every limitsInterval (0.5 s); the change wakes
	// the waiting slot at once. 3 s leaves room for a loaded CI machine.
	if took > 3*time.Second {
		t.Errorf("the lifted limit took %s to take effect", took)
	}
}
