package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// runDeliveredMemory adds to the memory scenario what the dedup window
// costs: n envelopes (36-byte ids) delivered (claimed and acked as the
// forwarder acks them) in a topic of 8 slots with a dedup window, and the
// delivered sets' MEMORY USAGE per remembered id.
func (e *env) runDeliveredMemory(ctx context.Context, r *Scenario, n int) error {
	per, err := e.deliveredPer(ctx, n)
	if err != nil {
		return err
	}
	r.Notes = append(r.Notes, fmt.Sprintf("dedup window: %d ids of 36 bytes delivered over 8 slots and remembered: %.0f bytes per id (MEMORY USAGE of the :delivered sets)", n, per))
	r.target("Redis bytes per remembered id (dedup window)", per, "<=", 160, "bytes")
	fmt.Fprintf(os.Stderr, "   memory per remembered id (dedup window): %.0f bytes\n", per)
	return nil
}

// deliveredPer delivers n envelopes due now and returns the delivered sets'
// MEMORY USAGE per id.
func (e *env) deliveredPer(ctx context.Context, n int) (float64, error) {
	prefix := e.prefix("memory-delivered")
	defer e.dropKeys(prefix)
	t := queue.Topic{Name: "bench", Prefix: prefix, Slots: 8, Format: queue.FormatEnvelope, DedupWindow: time.Hour}
	const chunk = 10_000
	for i := 0; i < n; i += chunk {
		items := make([]queue.Item, 0, chunk)
		for j := i; j < min(i+chunk, n); j++ {
			id := fmt.Sprintf("%08x-0000-4000-8000-%012x", j, j)
			items = append(items, queue.Item{Message: queue.Message{ID: id, Body: []byte("x")}, When: queue.In(-time.Second)})
		}
		if _, err := e.q.ScheduleBatch(ctx, t, items); err != nil {
			return 0, fmt.Errorf("memory-delivered: %w", err)
		}
	}
	var bytes int64
	for slot := range t.SlotCount() {
		for {
			c, err := e.q.Claim(ctx, t, slot, 1000, time.Minute)
			if err != nil {
				return 0, fmt.Errorf("memory-delivered: %w", err)
			}
			if len(c.Messages) == 0 {
				break
			}
			ms := make([]string, len(c.Messages))
			for i, m := range c.Messages {
				ms[i] = m.Member
			}
			if _, err := e.q.Ack(ctx, t, slot, ms); err != nil {
				return 0, fmt.Errorf("memory-delivered: %w", err)
			}
		}
		b, err := e.rdb.MemoryUsage(ctx, t.Keys(slot).Delivered, 0).Result()
		if err != nil {
			return 0, fmt.Errorf("memory-delivered: MEMORY USAGE: %w", err)
		}
		bytes += b
	}
	return math.Round(float64(bytes) / float64(n)), nil
}
