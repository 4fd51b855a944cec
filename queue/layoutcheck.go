package queue

import (
	"context"
	"sync"
	"time"
)

// layoutCheckTTL is how long a producer trusts that a topic's settings
// agree with the registry before it reads the registry again: a daemon
// resized meanwhile is noticed within this time, at the cost of one HGET
// per topic per period.
const layoutCheckTTL = time.Minute

// layoutChecks remembers which topics (by prefix, name and data layout)
// agreed with the registry, and when.
type layoutChecks struct {
	mu sync.Mutex
	ok map[checkKey]time.Time
}

type checkKey struct {
	prefix string
	layout Layout
}

// checkLayout is CheckTopic, remembered for layoutCheckTTL once it passed.
// Only passes are remembered: a refused producer checks again at its next
// call, so fixing the daemon's settings (or the producer's) takes effect at
// once.
func (q *Queue) checkLayout(ctx context.Context, t Topic) error {
	k := checkKey{prefix: t.KeyPrefix(), layout: LayoutOf(t)}
	q.checks.mu.Lock()
	at, ok := q.checks.ok[k]
	q.checks.mu.Unlock()
	if ok && time.Since(at) < layoutCheckTTL {
		return nil
	}
	if err := q.CheckTopic(ctx, t); err != nil {
		return err
	}
	q.checks.mu.Lock()
	q.checks.ok[k] = time.Now()
	q.checks.mu.Unlock()
	return nil
}
