package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// Every Redis connection of the daemon is reset (TCP RST) again and again
// while messages fall due: a claim whose reply is lost leaves its messages
// in flight until their lease expires, an ack whose reply is lost is
// retried. Nothing may be lost; a duplicate needs an ack that could not be
// written for half a lease.
func TestRedisConnectionsResetRepeatedlyLosesNothing(t *testing.T) {
	t.Parallel()
	r := report(t, "3a redis-reset-every-700ms")
	b := newBridge(t, defaultSlots, nil).set("DELAYBRIDGE_LEASE", "3s")
	p := b.redisBehind()
	b.mq.Consume(t)

	const n = 3000
	start := time.Now()
	plan := e2etest.NewPlan(n, start.Add(2*time.Second), 14*time.Second)
	plan.Schedule(t, b.rdb, b.topic, e2etest.RawMember, nil)
	d := b.start()

	resets := 0
	for next := start.Add(2 * time.Second); next.Before(plan.Last()); next = next.Add(700 * time.Millisecond) {
		until(next)
		p.Reset()
		resets++
	}

	b.settle(plan, b.mq.Deliveries, false, 120*time.Second)
	stop(t, d)
	o := plan.Count(b.mq.Deliveries(), nil)
	bound := resets * b.inflightBound()
	r.count(t, o, fmt.Sprintf("%d resets of every Redis connection; lease 3s", resets))
	if o.Duplicates > bound {
		t.Errorf("%d duplicates after %d resets, more than %d", o.Duplicates, resets, bound)
	}
	b.expectDrained()
}

// Redis is unreachable for 10 s: the daemon stops claiming once its
// heartbeat fails for a TTL, the batches it had in flight are published but
// cannot be acknowledged, and they come back when their lease expires after
// Redis returns (duplicates, bounded by what was in flight).
func TestRedisUnreachableFor10sLosesNothing(t *testing.T) {
	t.Parallel()
	r := report(t, "3b redis-cut-10s")
	b := newBridge(t, defaultSlots, nil).set("DELAYBRIDGE_LEASE", "4s")
	p := b.redisBehind()
	b.mq.Consume(t)

	const n = 3000
	start := time.Now()
	plan := e2etest.NewPlan(n, start.Add(2*time.Second), 20*time.Second)
	plan.Schedule(t, b.rdb, b.topic, e2etest.RawMember, nil)
	d := b.start()

	until(start.Add(6 * time.Second))
	p.Cut()
	time.Sleep(10 * time.Second)
	p.Restore()
	restored := time.Now()

	b.settle(plan, b.mq.Deliveries, false, 120*time.Second)
	stop(t, d)
	o := plan.Count(b.mq.Deliveries(), nil)
	bound := b.inflightBound()
	r.count(t, o, fmt.Sprintf("cut 10s; lease 4s; backlog delivered %s after restore", ms(drained(plan, o, restored).Sub(restored))))
	if o.Duplicates > bound {
		t.Errorf("%d duplicates, more than the %d that can be in flight at the cut", o.Duplicates, bound)
	}
	b.expectDrained()
}
