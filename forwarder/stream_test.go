package forwarder

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// streamSink is a sinks.Streamer: each stream records the bodies started on
// it and answers at once.
type streamSink struct {
	mu      sync.Mutex
	streams [][]string
}

func (s *streamSink) Stream() sinks.Starter {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streams = append(s.streams, nil)
	return &recordStream{sink: s, n: len(s.streams) - 1}
}

func (s *streamSink) Publish(context.Context, []sinks.Message) error {
	panic("a sinks.Streamer was published to with Publish")
}

func (s *streamSink) Close() error { return nil }

type recordStream struct {
	sink *streamSink
	n    int
}

func (r *recordStream) Start(_ context.Context, msgs []sinks.Message) (<-chan struct{}, func() error) {
	r.sink.mu.Lock()
	defer r.sink.mu.Unlock()
	for _, m := range msgs {
		r.sink.streams[r.n] = append(r.sink.streams[r.n], string(m.Body))
	}
	return closed, func() error { return nil }
}

func (s *streamSink) snapshot() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]string, len(s.streams))
	for i, b := range s.streams {
		out[i] = append([]string(nil), b...)
	}
	return out
}

// Each slot publishes on a stream of its own: a sink keeps order within a
// stream only, so no slot's publishes wait for another's.
func TestEachSlotStartsOnAStreamOfItsOwn(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := &streamSink{}
	const slots, n = 4, 40
	topic := queue.Topic{Name: "t", Prefix: prefix, Slots: slots}
	scheduleNumbered(t, q, topic, n, time.Now().Add(-time.Second))
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true,
		BatchSize: 5, PollInterval: 20 * time.Millisecond})

	eventually(t, 10*time.Second, "every message started", func() bool {
		total := 0
		for _, b := range sink.snapshot() {
			total += len(b)
		}
		return total == n
	})
	streams := sink.snapshot()
	if len(streams) != slots {
		t.Fatalf("%d streams for %d slots", len(streams), slots)
	}
	seen := map[int]bool{}
	for i, bodies := range streams {
		if len(bodies) == 0 {
			continue // a slot with no message
		}
		slot := queue.Slot([]byte(bodies[0]), slots)
		if seen[slot] {
			t.Fatalf("two streams publish slot %d", slot)
		}
		seen[slot] = true
		for _, b := range bodies {
			if got := queue.Slot([]byte(b), slots); got != slot {
				t.Fatalf("stream %d publishes slots %d and %d", i, slot, got)
			}
		}
	}
}
