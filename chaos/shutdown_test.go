package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// shutdownTimeout is DELAYBRIDGE_SHUTDOWN_TIMEOUT in the SIGTERM scenario.
const shutdownTimeout = 3 * time.Second

// SIGTERM while the broker stalls: the batches waiting for confirms cannot
// finish, so after the shutdown timeout they are returned to Redis and the
// daemon exits 0. Closing the AMQP connection then waits up to 5 s for a
// broker that does not answer (and the HTTP server up to 2 s), so exit comes
// up to about 7 s after the shutdown timeout: the pod's grace period must
// leave that room (deploy/: 30 s and 45 s). A new daemon, once the broker
// answers again, delivers what was returned: nothing lost.
func TestSIGTERMWhileRabbitMQStallsReturnsInflightAndExitsInTime(t *testing.T) {
	t.Parallel()
	r := report(t, "2e rabbitmq-stall-then-sigterm")
	b := newBridge(t, defaultSlots, nil).set("DELAYBRIDGE_SHUTDOWN_TIMEOUT", shutdownTimeout.String())
	p := b.amqpBehind()
	b.mq.Consume(t)

	const n = 2000
	d := b.start()
	start := time.Now()
	plan := e2etest.NewPlan(n, start.Add(2*time.Second), 8*time.Second)
	plan.Schedule(t, b.rdb, b.topic, e2etest.RawMember, nil)

	until(start.Add(4 * time.Second))
	p.Stall()
	e2etest.WaitFor(t, 30*time.Second, "messages in flight behind the stalled broker", func() bool {
		n, err := e2etest.Inflight(context.Background(), b.rdb, b.topic)
		return err == nil && n > 0
	})
	held, _ := e2etest.Inflight(context.Background(), b.rdb, b.topic)
	termAt := time.Now()
	err := d.Stop(shutdownTimeout + 15*time.Second) // 7 s, and slack for a loaded machine
	took := time.Since(termAt)
	if err != nil {
		t.Errorf("daemon after SIGTERM with a stalled broker: %v", err)
	}
	if left, err := e2etest.Inflight(context.Background(), b.rdb, b.topic); err != nil || left != 0 {
		t.Errorf("%d messages (%v) left in flight after the daemon exited: it must return them", left, err)
	}
	p.Restore()
	d2 := b.start()
	b.settle(plan, b.mq.Deliveries, false, 120*time.Second)
	stop(t, d2)
	o := plan.Count(b.mq.Deliveries(), nil)
	r.count(t, o, fmt.Sprintf("%d in flight at SIGTERM; exit %s after it (shutdown timeout %s); a new daemon delivered the rest", held, ms(took), shutdownTimeout))
	if o.Duplicates > b.inflightBound() {
		t.Errorf("%d duplicates, more than the %d that can be in flight", o.Duplicates, b.inflightBound())
	}
	b.expectDrained()
}
