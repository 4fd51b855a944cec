package forwarder

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// blockingSink is a broker that blocks publishing while blocked is set, as
// RabbitMQ does during a resource alarm: Ping and Publish fail with a
// sinks.BlockedError.
type blockingSink struct {
	mu      sync.Mutex
	blocked bool
	got     map[string]time.Time // body → when it was confirmed
}

func (s *blockingSink) Publish(_ context.Context, msgs []sinks.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.blocked {
		return &sinks.BlockedError{Reason: "low on memory"}
	}
	for _, m := range msgs {
		if _, ok := s.got[string(m.Body)]; !ok {
			s.got[string(m.Body)] = time.Now()
		}
	}
	return nil
}

func (s *blockingSink) Ping(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.blocked {
		return &sinks.BlockedError{Reason: "low on memory"}
	}
	return nil
}

func (s *blockingSink) Close() error { return nil }

// TestEverySlotClaimsWithin100msOfABlockLifting: while the broker blocks
// publishing nothing is claimed and the block is exported with its reason;
// once it lifts every slot claims again within 100 ms, however long it
// lasted (a back-off grown to a second would leave slots waiting).
func TestEverySlotClaimsWithin100msOfABlockLifting(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := &blockingSink{blocked: true, got: map[string]time.Time{}}
	topic := queue.Topic{Name: "t", Prefix: prefix, Slots: 8}
	ctx := context.Background()
	slotOf := map[string]int{}
	for i := range 64 {
		body := fmt.Sprintf("m%02d", i)
		slotOf[body] = topic.SlotOf([]byte(body))
		if _, err := q.ScheduleMember(ctx, topic, []byte(body), queue.In(0)); err != nil {
			t.Fatal(err)
		}
	}
	m := NewMetrics(prometheus.NewRegistry())
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true, Metrics: m, PollInterval: time.Second})
	blocked := m.SinkBlocked.WithLabelValues("t", "low on memory")
	eventually(t, 5*time.Second, "delaybridge_sink_blocked names the block", func() bool { return testutil.ToFloat64(blocked) == 1 })
	time.Sleep(2500 * time.Millisecond) // longer than the longest wait between pings of a sink that is down
	if n := testutil.ToFloat64(m.Claimed.WithLabelValues("t")); n != 0 {
		t.Errorf("claimed %v messages while the broker blocked publishing", n)
	}
	sink.mu.Lock()
	sink.blocked = false
	lifted := time.Now()
	sink.mu.Unlock()
	eventually(t, 5*time.Second, "every message published", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return len(sink.got) == len(slotOf)
	})
	first := map[int]time.Duration{}
	sink.mu.Lock()
	for body, at := range sink.got {
		s := slotOf[body]
		if d, ok := first[s]; !ok || at.Sub(lifted) < d {
			first[s] = at.Sub(lifted)
		}
	}
	sink.mu.Unlock()
	for s, d := range first {
		if d > 100*time.Millisecond {
			t.Errorf("slot %d published %s after the block lifted, want within 100ms", s, d.Round(time.Millisecond))
		}
	}
	if testutil.CollectAndCount(m.SinkBlocked) != 0 {
		t.Errorf("delaybridge_sink_blocked still has a series after the block lifted")
	}
	t.Logf("first publish per slot after the block lifted: %v", first)
}
