package forwarder

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// inflightAtPublish is a recordSink that reads, as each batch is published,
// how many members the slot's in-flight set holds: the batch itself, plus
// any earlier batch confirmed but not acked yet.
type inflightAtPublish struct {
	*recordSink
	rdb *redis.Client
	key string

	mu   sync.Mutex
	seen []int64 // in-flight members minus the batch's own, per publish
}

func (s *inflightAtPublish) Publish(ctx context.Context, msgs []sinks.Message) error {
	n, err := s.rdb.ZCard(ctx, s.key).Result()
	if err == nil {
		s.mu.Lock()
		s.seen = append(s.seen, n-int64(len(msgs)))
		s.mu.Unlock()
	}
	return s.recordSink.Publish(ctx, msgs)
}

// TestConfirmedBatchLeavesTheInflightCapBeforeItsAck: with one batch in
// flight per slot, a batch counts until its confirm, not its ack
// (MaxInflightBatches), so the next claim overlaps the previous batch's
// ack: some batch is published while the one before it still waits in the
// in-flight set for its ack. Before, claim, confirm and ack followed one
// another (the knobs bench: 0.61x the default's throughput at 1 x 100).
// Order within the slot is unchanged.
func TestConfirmedBatchLeavesTheInflightCapBeforeItsAck(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	q := queue.New(rdb)
	tp := queue.Topic{Name: "one", Prefix: prefix}
	scheduleNow(t, q, tp, 200, "m")
	sink := &inflightAtPublish{recordSink: newRecordSink(), rdb: rdb, key: tp.Keys(0).Inflight}
	start(t, Options{Queue: q, Topics: []Topic{{Topic: tp, Sink: sink}}, KeyPrefix: prefix, AllSlots: true,
		BatchSize: 10, MaxInflightBatches: 1, Metrics: NewMetrics(prometheus.NewRegistry())})
	eventually(t, 10*time.Second, "200 delivered", func() bool { return len(sink.published()) == 200 })
	overlapped := 0
	sink.mu.Lock()
	for _, extra := range sink.seen {
		if extra > 0 {
			overlapped++
		}
	}
	batches := len(sink.seen)
	sink.mu.Unlock()
	t.Logf("%d of %d batches published while an earlier confirmed one awaited its ack", overlapped, batches)
	if overlapped == 0 {
		t.Errorf("no batch was published before the previous one's ack: the in-flight cap still counts a batch until its ack")
	}
	prev := ""
	for i, p := range sink.published() {
		if p.msg.Body != nil && string(p.msg.Body) < prev {
			t.Fatalf("message %d (%s) published after %s: the slot's order broke", i, p.msg.Body, prev)
		}
		prev = string(p.msg.Body)
	}
}
