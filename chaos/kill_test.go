package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// Three replicas share eight slots; every second one of them is killed with
// SIGKILL and a new one (a new pod: a new replica id) takes its place. The
// killed replica's claims come back when their lease expires, so messages
// can arrive twice but never be lost.
func TestSIGKILLOfAReplicaEverySecondLosesNothing(t *testing.T) {
	t.Parallel()
	r := report(t, "1 sigkill-1-of-3-replicas-every-1s")
	b := newBridge(t, 8, nil).set("DELAYBRIDGE_LEASE", "2s")

	const n = 4000
	start := time.Now()
	plan := e2etest.NewPlan(n, start.Add(3*time.Second), 12*time.Second)
	plan.Schedule(t, b.rdb, b.topic, e2etest.RawMember, nil)
	b.mq.Consume(t)

	replicas := make([]*e2etest.Daemon, 3)
	gen := 0
	launch := func(i int) {
		gen++
		b.vars["DELAYBRIDGE_REPLICA_ID"] = fmt.Sprintf("%s-r%d-%d", b.name, i, gen)
		replicas[i] = b.start()
	}
	for i := range replicas {
		launch(i)
	}
	kills := 0
	for next := time.Now().Add(time.Second); next.Before(plan.Last().Add(time.Second)); next = next.Add(time.Second) {
		until(next)
		i := kills % len(replicas)
		replicas[i].Kill()
		kills++
		launch(i)
	}

	b.settle(plan, b.mq.Deliveries, false, 120*time.Second)
	for _, d := range replicas {
		stop(t, d)
	}
	o := plan.Count(b.mq.Deliveries(), nil)
	// A killed replica can have published, unacknowledged, at most what it
	// held in flight.
	bound := kills * b.inflightBound()
	r.count(t, o, fmt.Sprintf("%d SIGKILLs, %d replicas started; duplicate bound %d", kills, gen, bound))
	if o.Duplicates > bound {
		t.Errorf("%d duplicates after %d kills, more than %d (each kill can repeat at most %d in-flight messages)",
			o.Duplicates, kills, bound, b.inflightBound())
	}
	if kills < 5 {
		t.Errorf("only %d kills happened; the machine is too slow for this scenario", kills)
	}
	b.expectDrained()
}
