package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/delaybridge/delaybridge/forwarder"
	"github.com/delaybridge/delaybridge/queue"
)

// How often the daemon reads Redis's INFO memory, and how often it repeats
// the ERROR about a policy that evicts.
const (
	memoryCheckEvery = 10 * time.Second
	evictingLogEvery = 5 * time.Minute
)

// memoryWatch reads Redis's memory limit and policy periodically (INFO
// memory, readable where CONFIG is disabled). A policy that evicts any key
// (allkeys-*) deletes scheduled messages without a trace when Redis fills:
// it is logged at ERROR at start and every evictingLogEvery, and exported,
// while the daemon keeps delivering (stopping would not protect the data).
// A full Redis refuses new messages: /readyz says so, and the backlog still
// drains (queue's allow-oom scripts). A user not granted INFO leaves both
// unknown: one WARN, gauges at 0.
type memoryWatch struct {
	q        *queue.Queue
	log      *slog.Logger
	every    time.Duration
	logEvery time.Duration
	metrics  *forwarder.Metrics

	mu       sync.Mutex
	last     queue.Memory
	known    bool
	loggedEv time.Time // when the evicting policy was last logged
	warnedNA bool      // INFO refused, logged once
}

func newMemoryWatch(q *queue.Queue, m *forwarder.Metrics, log *slog.Logger) *memoryWatch {
	return &memoryWatch{q: q, log: log, every: memoryCheckEvery, logEvery: evictingLogEvery, metrics: m}
}

// run reads at once, then every w.every, until ctx ends.
func (w *memoryWatch) run(ctx context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := w.q.Memory(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		w.record(m, err)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// record keeps one reading, sets the gauges and logs what changed.
func (w *memoryWatch) record(m queue.Memory, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if redisUnreachable(err) {
			return // not the policy's fault: the forwarder's outage line says Redis does not answer
		}
		if !w.warnedNA {
			w.warnedNA = true
			w.log.Warn("cannot read Redis's memory policy; an evicting policy would go unreported", "err", err)
		}
		return
	}
	was := w.last
	w.last, w.known = m, true
	w.metrics.RedisUsed.Set(float64(m.Used))
	w.metrics.RedisMax.Set(float64(m.Max))
	w.metrics.RedisFull.Set(b2f(m.Full()))
	w.metrics.RedisEvicting.Reset()
	w.metrics.RedisEvicting.WithLabelValues(m.Policy).Set(b2f(m.Evicting()))
	if m.Evicting() && (w.loggedEv.IsZero() || time.Since(w.loggedEv) >= w.logEvery) {
		w.loggedEv = time.Now()
		w.log.Error("Redis may evict scheduled messages: they would be lost without a trace", "err", m.EvictingError())
	}
	switch {
	case m.Full() && !was.Full():
		w.log.Warn("Redis is full: it refuses new messages until the backlog drains or maxmemory is raised; delivery goes on",
			"used_bytes", m.Used, "maxmemory_bytes", m.Max, "policy", m.Policy)
	case !m.Full() && was.Full():
		w.log.Info("Redis has room again", "used_bytes", m.Used, "maxmemory_bytes", m.Max)
	}
}

// err is why /readyz reports Redis: full, or nil.
func (w *memoryWatch) err() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.known && w.last.Full() {
		return fmt.Errorf("redis full: %d of maxmemory %d bytes used, new messages are refused (the backlog still drains)", w.last.Used, w.last.Max)
	}
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
