package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// memoryBody is the body size memory measures with (issue #15: 100 bytes).
const memoryBody = 100

// runMemory: Redis's used_memory per message for the same bodies scheduled
// through the producer API (ScheduleBatch with queue.At an hour ahead) as
// raw members and, separately, as envelopes (id: the raw member's message
// id, 32 hex digits). No daemon.
func runMemory(ctx context.Context, e *env) (Scenario, error) {
	n := e.o.sizes.memory
	r := Scenario{Messages: n}
	raw, err := e.memoryPer(ctx, "memory-raw", queue.FormatRaw, n)
	if err != nil {
		return r, err
	}
	env, err := e.memoryPer(ctx, "memory-envelope", queue.FormatEnvelope, n)
	if err != nil {
		return r, err
	}
	r.PerMessage = &Costs{Messages: n, RedisBytes: raw, EnvelopeBytes: env, EnvelopeExtra: env - raw}
	r.Notes = append(r.Notes, fmt.Sprintf("%d messages of %d-byte bodies each way, 8 slots, due in an hour, through queue.ScheduleBatch: Redis used_memory +%.0f bytes per raw message, +%.0f per envelope", n, memoryBody, raw, env))
	r.target("Redis used_memory per envelope − per raw message", env-raw, "<=", 100, "bytes", fmt.Sprintf("raw %.0f, envelope %.0f", raw, env))
	fmt.Fprintf(os.Stderr, "   used_memory per message: raw %.0f bytes, envelope %.0f bytes (+%.0f)\n", raw, env, env-raw)
	return r, e.runDeliveredMemory(ctx, &r, n)
}

// memoryPer schedules n messages of memoryBody bytes in a topic of format
// and returns Redis's used_memory delta per message.
func (e *env) memoryPer(ctx context.Context, name string, format queue.Format, n int) (float64, error) {
	prefix := e.prefix(name)
	defer e.dropKeys(prefix)
	t := queue.Topic{Name: "bench", Prefix: prefix, Slots: 8, Format: format}
	e.waitLazyFree(ctx)
	before, err := e.redisCounters(ctx)
	if err != nil {
		return 0, err
	}
	due := time.Now().Add(time.Hour)
	const chunk = 10_000
	for i := 0; i < n; i += chunk {
		items := make([]queue.Item, 0, chunk)
		for j := i; j < min(i+chunk, n); j++ {
			at := due.Add(time.Duration(j) * time.Millisecond)
			b := body(j, at.UnixMilli(), memoryBody)
			m := queue.Message{Body: b}
			if format == queue.FormatEnvelope {
				m.ID = queue.MessageID(b)
			}
			items = append(items, queue.Item{Message: m, When: queue.At(at)})
		}
		if _, err := e.q.ScheduleBatch(ctx, t, items); err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
	}
	after, err := e.redisCounters(ctx)
	if err != nil {
		return 0, err
	}
	card := int64(0)
	for slot := range t.SlotCount() {
		c, err := e.rdb.ZCard(ctx, t.Keys(slot).Scheduled).Result()
		if err != nil {
			return 0, err
		}
		card += c
	}
	if card != int64(n) {
		return 0, fmt.Errorf("%s: %d of %d messages scheduled", name, card, n)
	}
	return math.Round(float64(after.mem-before.mem) / float64(n)), nil
}
