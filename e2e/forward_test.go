package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// The forwarding tests use one raw topic of eight slots under the test's
// prefix.
const (
	topic = "orders"
	slots = 8
)

// schedule plans n messages due spread evenly over [from, from+spread) and
// writes them where docs/architecture.md (Redis key layout) tells a producer
// to, not asking package queue.
func schedule(t *testing.T, rdb redis.UniversalClient, prefix string, n int, from time.Time, spread time.Duration) *e2etest.Plan {
	t.Helper()
	p := e2etest.NewPlan(n, from, spread)
	p.Cancelled = map[int]bool{}
	if err := p.Write(context.Background(), rdb, e2etest.ProducerKey(prefix, topic, slots), e2etest.RawMember, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// cancelAndReschedule cancels 5% and moves 5% one second later, all before
// they fall due, and returns the rescheduled ones.
func cancelAndReschedule(t *testing.T, rdb redis.UniversalClient, prefix string, p *e2etest.Plan) (rescheduled map[int]bool) {
	t.Helper()
	ctx := context.Background()
	key := e2etest.ProducerKey(prefix, topic, slots)
	rescheduled = map[int]bool{}
	n := p.Len()
	rng := rand.New(rand.NewPCG(1, 2))
	quota := n / 20
	for _, i := range rng.Perm(n) {
		if len(p.Cancelled) == quota && len(rescheduled) == quota {
			break
		}
		if time.Until(p.Due[i]) < 300*time.Millisecond {
			continue // too close to its due time to be sure it is not claimed yet
		}
		m := e2etest.RawMember(i)
		k, _ := key(m)
		if len(p.Cancelled) < quota {
			removed, err := rdb.ZRem(ctx, k, m).Result()
			if err != nil || removed != 1 {
				t.Fatalf("cancel %d: %d %v", i, removed, err)
			}
			p.Cancelled[i] = true
			continue
		}
		later := p.Due[i].Add(time.Second)
		if err := rdb.ZAdd(ctx, k, redis.Z{Score: float64(later.UnixMilli()), Member: m}).Err(); err != nil {
			t.Fatal(err)
		}
		p.Due[i] = later
		rescheduled[i] = true
	}
	if len(p.Cancelled) != quota || len(rescheduled) != quota {
		t.Fatalf("cancelled %d and rescheduled %d of %d messages, want %d each: too few were still 300 ms from their due time", len(p.Cancelled), len(rescheduled), n, quota)
	}
	return rescheduled
}

// verdict checks every delivery against the plan: lost must be 0, early must
// be 0 (a rescheduled message against its new time), cancelled must never
// arrive, every due header must be the planned time; it returns the outcome
// with its duplicates.
func verdict(t *testing.T, p *e2etest.Plan, rescheduled map[int]bool, got []e2etest.Delivery) e2etest.Outcome {
	t.Helper()
	o := p.Count(got, nil)
	t.Logf("cancelled %d, rescheduled %d, deliveries %d", len(p.Cancelled), len(rescheduled), len(got))
	o.Check(t)
	for _, d := range got {
		if i := e2etest.Number(d.Body); rescheduled[i] && d.At.Before(p.Due[i]) {
			t.Errorf("rescheduled message %d arrived %s before its new time", i, p.Due[i].Sub(d.At))
		}
	}
	return o
}

// forwarding is the world of a test that forwards to RabbitMQ: a key prefix
// of its own, a consumed queue of the same name, n messages written, due
// spread evenly over [now+lead, now+lead+spread), and the daemon's variables.
type forwarding struct {
	name string
	rdb  *redis.Client
	mq   *e2etest.Rabbit
	plan *e2etest.Plan
	vars map[string]string
}

func newForwarding(t *testing.T, n int, lead, spread time.Duration) *forwarding {
	t.Helper()
	f := &forwarding{name: e2etest.Unique(t)}
	f.rdb = e2etest.ConnectRedis(t, f.name)
	f.mq = e2etest.NewRabbit(t, f.name, nil)
	f.mq.Consume(t)
	f.plan = schedule(t, f.rdb, f.name, n, time.Now().Add(lead), spread)
	f.vars = f.mq.TopicVars(f.name, topic, slots)
	f.vars["DELAYBRIDGE_HEARTBEAT_INTERVAL"] = "200ms"
	f.vars["DELAYBRIDGE_HEARTBEAT_TTL"] = "1s"
	return f
}

func TestEveryMessageArrivesOnceNeverEarlyWithCancelsAndReschedules(t *testing.T) {
	t.Parallel()
	f := newForwarding(t, 20000, 2*time.Second, 4*time.Second)
	f.vars["DELAYBRIDGE_REPLICA_ID"] = f.name
	d := startDaemon(t, f.vars)
	rescheduled := cancelAndReschedule(t, f.rdb, f.name, f.plan)
	want := f.plan.Len() - len(f.plan.Cancelled)
	e2etest.WaitFor(t, 60*time.Second, fmt.Sprintf("%d deliveries", want), func() bool { return f.mq.Received() >= want })
	time.Sleep(1500 * time.Millisecond) // would-be duplicates and cancelled ones have time to show
	stop(t, d)
	if o := verdict(t, f.plan, rescheduled, f.mq.Deliveries()); o.Duplicates != 0 {
		t.Errorf("%d duplicates without any crash", o.Duplicates)
	}
	expectEmpty(t, f.rdb, f.name)
}

func TestKillNineWhileMessagesFallDueLosesNothing(t *testing.T) {
	t.Parallel()
	f := newForwarding(t, 20000, 2*time.Second, 6*time.Second)
	f.vars["DELAYBRIDGE_LEASE"] = "1s"
	rescheduled := cancelAndReschedule(t, f.rdb, f.name, f.plan)
	kills := 0
	// At least four kills even when a loaded machine made scheduling slow.
	for kills < 4 || time.Now().Before(f.plan.Due[f.plan.Len()-1].Add(-500*time.Millisecond)) {
		d := startDaemon(t, f.vars)
		time.Sleep(time.Duration(400+rand.IntN(600)) * time.Millisecond)
		d.Kill()
		kills++
	}
	d := startDaemon(t, f.vars)
	want := f.plan.Len() - len(f.plan.Cancelled)
	e2etest.WaitFor(t, 90*time.Second, fmt.Sprintf("%d deliveries after %d kills", want, kills), func() bool {
		return f.mq.Distinct() >= want
	})
	time.Sleep(2 * time.Second) // leases of the last killed daemon are reaped: duplicates show
	stop(t, d)
	o := verdict(t, f.plan, rescheduled, f.mq.Deliveries())
	t.Logf("%d SIGKILLs: %d duplicates (at-least-once)", kills, o.Duplicates)
	if kills < 3 {
		t.Errorf("only %d kills happened", kills)
	}
	// The killed replicas' heartbeats expire; nothing else may be left.
	e2etest.WaitFor(t, 10*time.Second, "redis empty", func() bool {
		left := e2etest.Keys(t, f.rdb, f.name)
		return len(left) == 0 || (len(left) == 1 && left[0] == f.name+":replicas")
	})
}
