package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// producer writes numbered messages to the test's topic while the test runs,
// each due a fixed delay after it was written, the way docs/architecture.md
// (Redis key layout) tells a producer to compute its keys. Its plan gets each message's due time as it
// is written; read it only after wait.
type producer struct {
	rdb  redis.UniversalClient
	key  func(member string) (string, error)
	plan *e2etest.Plan

	mu   sync.Mutex
	err  error
	done chan struct{}
}

func newProducer(rdb redis.UniversalClient, prefix string, n int) *producer {
	return &producer{
		rdb:  rdb,
		key:  e2etest.ProducerKey(prefix, topic, slots),
		plan: &e2etest.Plan{Due: make([]time.Time, n)},
		done: make(chan struct{}),
	}
}

// write schedules messages from..to-1, each due delay from now.
func (p *producer) write(ctx context.Context, from, to int, delay time.Duration) error {
	due := time.Now().Add(delay).Truncate(time.Millisecond)
	numbers := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		p.plan.Due[i] = due
		numbers = append(numbers, i)
	}
	if err := p.plan.Write(ctx, p.rdb, p.key, e2etest.RawMember, numbers); err != nil {
		return fmt.Errorf("schedule messages %d-%d: %w", from, to-1, err)
	}
	return nil
}

// run writes n messages at an even rate over spread (in steps of 50 ms), the
// first `already` of them having been written before, each due delay after
// it is written. It ends early when ctx ends.
func (p *producer) run(ctx context.Context, n, already int, spread, delay time.Duration) {
	defer close(p.done)
	const step = 50 * time.Millisecond
	start := time.Now()
	next := already
	for next < n && ctx.Err() == nil {
		elapsed := time.Since(start) + step
		upTo := min(n, already+int(float64(n-already)*float64(elapsed)/float64(spread)))
		if upTo > next {
			if err := p.write(ctx, next, upTo, delay); err != nil {
				p.mu.Lock()
				p.err = err
				p.mu.Unlock()
				return
			}
			next = upTo
		}
		select {
		case <-ctx.Done():
		case <-time.After(step):
		}
	}
}

// start runs the producer in the background; the test waits for it at its end.
func (p *producer) start(t *testing.T, n, already int, spread, delay time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	go p.run(ctx, n, already, spread, delay)
	t.Cleanup(func() {
		cancel()
		<-p.done
	})
}

// wait waits until every message is written.
func (p *producer) wait(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("producer did not finish within %s", within)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		t.Fatal(p.err)
	}
}
