package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// rollingRestart replaces three replicas one at a time, twice, the way a
// Deployment's rolling update does (SIGTERM to the old pod, a new pod with a
// new name, the next one once the new pod took its share) while messages
// fall due, and checks that nothing is lost and nothing is delivered twice:
// a clean shutdown leaves the replica set first, lets its claimed batches
// finish, and hands over slots without a lease ever expiring.
func rollingRestart(t *testing.T, b *backend, name string) {
	mq := e2etest.NewTransientRabbit(t, name)
	mq.Consume(t)
	const n = 40_000
	p := newProducer(b.rdb, name, n)
	vars := daemonVars(name, mq, 30*time.Second)
	const already = 1000
	if err := p.write(context.Background(), 0, already, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	p.start(t, n, already, 25*time.Second, time.Second)

	ds := []*replica{
		startReplica(t, b, "pod-a-1", vars),
		startReplica(t, b, "pod-b-1", vars),
		startReplica(t, b, "pod-c-1", vars),
	}
	waitFair(t, ds, 20*time.Second)
	time.Sleep(time.Second)
	// Round 2 replaces each pod before starting the next (maxUnavailable: 1),
	// round 3 starts the new pod first (maxSurge: 1): four replicas share
	// the slots for a moment, then the old one leaves.
	for round := 2; round <= 3; round++ {
		for i, old := range ds {
			id := fmt.Sprintf("pod-%c-%d", 'a'+i, round)
			var next *replica
			if round == 3 {
				next = startReplica(t, b, id, vars)
				waitFair(t, append(slices.Clone(ds), next), 20*time.Second)
			}
			began := time.Now()
			if err := old.Stop(30 * time.Second); err != nil {
				t.Errorf("%s exit after SIGTERM: %v", old.id, err)
			}
			exited := time.Since(began)
			if next == nil {
				next = startReplica(t, b, id, vars)
			}
			ds[i] = next
			waitFair(t, ds, 20*time.Second)
			t.Logf("replaced %s by %s: it exited %s after SIGTERM", old.id, next.id, exited.Round(time.Millisecond))
			time.Sleep(500 * time.Millisecond)
		}
	}

	p.wait(t, 90*time.Second)
	e2etest.WaitFor(t, 90*time.Second, fmt.Sprintf("%d messages delivered", n), func() bool { return mq.Distinct() >= n })
	time.Sleep(2 * time.Second) // a would-be duplicate has time to show
	stopAll(t, ds)
	o := p.plan.Count(mq.Deliveries(), nil)
	o.Check(t)
	if o.Duplicates != 0 {
		t.Errorf("%d duplicates through a rolling restart without any crash", o.Duplicates)
	}
	e2etest.WaitFor(t, 10*time.Second, "redis empty", func() bool { return len(e2etest.Keys(t, b.rdb, name)) == 0 })
}

func TestRollingRestartLosesNothingAndDuplicatesNothing(t *testing.T) {
	name := e2etest.Unique(t)
	rollingRestart(t, standalone(t, name), name)
}

func TestRedisClusterRollingRestartLosesNothingAndDuplicatesNothing(t *testing.T) {
	name := e2etest.Unique(t)
	rollingRestart(t, redisCluster(t, name), name)
}
