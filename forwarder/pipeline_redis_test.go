package forwarder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// heldSink is a sinks.Starter whose confirms the test releases: Start records the
// batch and returns at once, the answers come when release is closed.
type heldSink struct {
	mu      sync.Mutex
	started [][]sinks.Message
	release chan struct{}
}

func newHeldSink() *heldSink { return &heldSink{release: make(chan struct{})} }

func (h *heldSink) Start(_ context.Context, msgs []sinks.Message) (<-chan struct{}, func() error) {
	h.mu.Lock()
	h.started = append(h.started, append([]sinks.Message(nil), msgs...))
	h.mu.Unlock()
	return h.release, func() error { return nil }
}

func (h *heldSink) Publish(ctx context.Context, msgs []sinks.Message) error {
	done, result := h.Start(ctx, msgs)
	select {
	case <-done:
		return result()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *heldSink) Close() error { return nil }

// bodies lists the bodies started so far, in order, and how many Start calls.
func (h *heldSink) bodies() ([]string, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, b := range h.started {
		for _, m := range b {
			out = append(out, string(m.Body))
		}
	}
	return out, len(h.started)
}

func scheduleNumbered(t *testing.T, q *queue.Queue, topic queue.Topic, n int, from time.Time) {
	t.Helper()
	for i := range n {
		if _, err := q.ScheduleMember(context.Background(), topic, fmt.Appendf(nil, "m%02d", i), queue.At(from.Add(time.Duration(i)*time.Millisecond))); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNextBatchIsStartedWhileTheBrokerConfirmsAndInflightIsCapped(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := newHeldSink()
	topic := queue.Topic{Name: "t", Prefix: prefix}
	scheduleNumbered(t, q, topic, 50, time.Now().Add(-time.Second))
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true,
		BatchSize: 10, MaxInflightBatches: 2, PollInterval: 20 * time.Millisecond})

	eventually(t, 10*time.Second, "two batches started before any confirm", func() bool {
		got, calls := sink.bodies()
		return len(got) == 20 && calls == 2
	})
	time.Sleep(300 * time.Millisecond) // a slow broker must slow claiming
	if got, calls := sink.bodies(); len(got) != 20 || calls != 2 {
		t.Fatalf("started %d messages in %d batches while 20 (2 batches of 10) were unconfirmed", len(got), calls)
	}
	close(sink.release)
	eventually(t, 10*time.Second, "all started", func() bool {
		got, _ := sink.bodies()
		return len(got) == 50
	})
	got, _ := sink.bodies()
	for i, b := range got {
		if want := fmt.Sprintf("m%02d", i); b != want {
			t.Fatalf("message %d is %s, want %s (score order)", i, b, want)
		}
	}
	eventually(t, 10*time.Second, "redis empty after acks", func() bool { return len(keysLeft(t, q, prefix)) == 0 })
}

// gateSink fails its first Publish as a lost connection once the test opens
// the claim budget; later calls succeed.
type gateSink struct {
	recordSink
	gate  chan struct{}
	first sync.Once
}

func (g *gateSink) Publish(ctx context.Context, msgs []sinks.Message) error {
	failed := false
	g.first.Do(func() {
		<-g.gate
		failed = true
	})
	if failed {
		return sinks.NotConnected(errors.New("connection reset"))
	}
	return g.recordSink.Publish(ctx, msgs)
}

func TestConnectionLossReturnsTheBatchesClaimedAfterItToKeepSlotOrder(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := &gateSink{gate: make(chan struct{})}
	sink.connected = true
	topic := queue.Topic{Name: "t", Prefix: prefix}
	scheduleNumbered(t, q, topic, 20, time.Now().Add(-time.Second))
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true,
		BatchSize: 5, MaxInflightBatches: 4, PollInterval: 20 * time.Millisecond})

	k := topic.Keys(0)
	eventually(t, 10*time.Second, "all 20 claimed while the first batch is publishing", func() bool {
		n, _ := q.Client().ZCard(context.Background(), k.Inflight).Result()
		return n == 20
	})
	close(sink.gate) // the first batch loses its connection
	eventually(t, 10*time.Second, "all published", func() bool { return len(sink.published()) >= 20 })
	got := sink.published()
	if len(got) != 20 {
		t.Fatalf("published %d messages, want 20", len(got))
	}
	for i, p := range got {
		if want := fmt.Sprintf("m%02d", i); string(p.msg.Body) != want {
			t.Fatalf("message %d is %s, want %s: a batch claimed after the lost one was published before it", i, p.msg.Body, want)
		}
		if p.msg.Attempt != 1 {
			t.Errorf("%s: attempt %d after a connection loss, want 1", p.msg.Body, p.msg.Attempt)
		}
	}
}

func TestScannerSleepsUntilTheNextDueScoreNotThePollInterval(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := newRecordSink()
	topic := queue.Topic{Name: "t", Prefix: prefix}
	due := time.Now().Add(400 * time.Millisecond)
	if _, err := q.ScheduleMember(context.Background(), topic, []byte("later"), queue.At(due)); err != nil {
		t.Fatal(err)
	}
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true, PollInterval: time.Hour})
	eventually(t, 10*time.Second, "published at its due time, not after the hour-long poll interval", func() bool {
		return len(sink.published()) == 1
	})
	if p := sink.published()[0]; p.at.Before(p.msg.Due) {
		t.Errorf("published %s before its due time", p.msg.Due.Sub(p.at))
	}
}

func TestAlarmRingsOnlyForAScoreBeforeThePlan(t *testing.T) {
	a := newAlarm()
	rang := func() bool {
		select {
		case <-a.C:
			return true
		default:
			return false
		}
	}
	a.reset()
	a.ring(500) // during a claim: remembered, not rung
	if rang() {
		t.Fatal("rang while the scanner was claiming")
	}
	if got := a.plan(1000); got != 500 {
		t.Fatalf("plan(1000) = %v, want the 500 announced during the claim", got)
	}
	a.reset()
	if got := a.plan(1000); got != 1000 {
		t.Fatalf("plan after reset = %v, want 1000", got)
	}
	a.ring(2000)
	if rang() {
		t.Error("rang for a message due after the plan")
	}
	a.ring(1000)
	if rang() {
		t.Error("rang for a message due at the plan")
	}
	a.ring(999)
	if !rang() {
		t.Error("did not ring for a message due before the plan")
	}
	a.ring(math.Inf(-1))
	if !rang() {
		t.Error("did not ring for a message due now")
	}
	if got := a.plan(1000); !math.IsInf(got, -1) {
		t.Errorf("plan = %v, want -Inf (due now)", got)
	}
}
