package chaos

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/faultproxy"
)

// brokerCut is a broker unreachable for a while mid-stream: nothing may be
// claimed while the sink is down (in flight stays within the bound), /readyz
// says so, and everything arrives once the broker is back. Only the
// messages unconfirmed at the cut can arrive twice.
type brokerCut struct {
	b          *bridge
	p          *faultproxy.Proxy
	deliveries func() []e2etest.Delivery
	n          int
	cutAfter   time.Duration // from the start of the plan
	cutFor     time.Duration
	fair       *fairSide // a fair topic served beside, its messages over the same span (or nil)
}

func (c brokerCut) run(t *testing.T, r *row) {
	b := c.b
	start := time.Now()
	plan := e2etest.NewPlan(c.n, start.Add(2*time.Second), c.cutAfter+c.cutFor+8*time.Second)
	plan.Schedule(t, b.rdb, b.topic, e2etest.RawMember, nil)
	if c.fair != nil {
		c.fair.schedule(c.n/3, start.Add(2*time.Second), c.cutAfter+c.cutFor+8*time.Second)
	}
	d := b.start()

	until(start.Add(2*time.Second + c.cutAfter))
	c.p.Cut()
	cutAt := time.Now()
	var maxInflight, notReady atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	wait := sampleEvery(ctx, 200*time.Millisecond, func(ctx context.Context) {
		if n, err := e2etest.Inflight(ctx, b.rdb, b.topic); err == nil && n > maxInflight.Load() {
			maxInflight.Store(n)
		}
		if code, _, err := e2etest.Get(ctx, d.Addr(), "/readyz"); err == nil && code == http.StatusServiceUnavailable {
			notReady.Add(1)
		}
	})
	until(cutAt.Add(c.cutFor))
	cancel()
	wait()
	c.p.Restore()
	restored := time.Now()

	b.settle(plan, c.deliveries, false, 120*time.Second)
	e2etest.WaitFor(t, 30*time.Second, "/readyz 200 after the broker came back", func() bool {
		code, _, err := e2etest.Get(context.Background(), d.Addr(), "/readyz")
		return err == nil && code == http.StatusOK
	})
	bound := b.inflightBound()
	var fairNote []string
	if c.fair != nil {
		fairNote = append(fairNote, c.fair.check(t, bound))
	}
	stop(t, d)
	o := plan.Count(c.deliveries(), nil)
	r.count(t, o, append([]string{fmt.Sprintf("cut %s; in flight during cut ≤ %d (bound %d); backlog delivered %s after restore",
		ms(c.cutFor), maxInflight.Load(), bound, ms(drained(plan, o, restored).Sub(restored)))}, fairNote...)...)
	if maxInflight.Load() > int64(bound) {
		t.Errorf("%d messages in flight while the broker was unreachable, more than the bound %d", maxInflight.Load(), bound)
	}
	if notReady.Load() == 0 {
		t.Errorf("/readyz never answered 503 while the broker was unreachable")
	}
	if o.Duplicates > bound {
		t.Errorf("%d duplicates, more than the %d that can be unconfirmed at the cut", o.Duplicates, bound)
	}
	b.expectDrained()
	if c.fair != nil {
		c.fair.expectDrained()
	}
}

// drained is when the last message due before at was first delivered.
func drained(plan *e2etest.Plan, o e2etest.Outcome, at time.Time) time.Time {
	var last time.Time
	for i, f := range o.First {
		if plan.Due[i].Before(at) && f.After(last) {
			last = f
		}
	}
	return last
}

func TestRabbitMQUnreachableFor20sLosesNothing(t *testing.T) {
	t.Parallel()
	r := report(t, "2a rabbitmq-cut-20s")
	b := newBridge(t, defaultSlots, nil)
	p := b.amqpBehind()
	b.mq.Consume(t)
	fair := addFair(b) // the same fault for a fair topic (issue #50)
	brokerCut{b: b, p: p, deliveries: b.mq.Deliveries, n: 3000, cutAfter: 4 * time.Second, cutFor: 20 * time.Second, fair: fair}.run(t, r)
}

func TestKafkaUnreachableFor20sLosesNothing(t *testing.T) {
	t.Parallel()
	r := report(t, "2b kafka-cut-20s")
	b, p, k := kafkaBridge(t, defaultSlots)
	brokerCut{b: b, p: p, deliveries: k.Deliveries, n: 3000, cutAfter: 4 * time.Second, cutFor: 20 * time.Second}.run(t, r)
}
