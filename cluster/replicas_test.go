package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/membership"
)

const (
	topic = "orders"
	slots = 64
	// Heartbeats as short as the tests can afford: takeovers within a second.
	heartbeatInterval = 200 * time.Millisecond
	heartbeatTTL      = time.Second
)

// daemonVars configure a replica of the test's topic.
func daemonVars(prefix string, mq *e2etest.Rabbit, lease time.Duration) map[string]string {
	vars := mq.TopicVars(prefix, topic, slots)
	maps.Copy(vars, map[string]string{
		"DELAYBRIDGE_LEASE":              lease.String(),
		"DELAYBRIDGE_HEARTBEAT_INTERVAL": heartbeatInterval.String(),
		"DELAYBRIDGE_HEARTBEAT_TTL":      heartbeatTTL.String(),
		"DELAYBRIDGE_SHUTDOWN_TIMEOUT":   "10s",
	})
	return vars
}

// fairShare reports whether the daemons own every slot between them, each
// slots/n rounded down or up, and returns what each owns.
func fairShare(ds []*replica) (bool, []int) {
	owned := make([]int, len(ds))
	sum := 0
	for i, d := range ds {
		owned[i] = d.owned(topic)
		sum += owned[i]
	}
	lo, hi := slots/len(ds), (slots+len(ds)-1)/len(ds)
	for _, o := range owned {
		if o < lo || o > hi {
			return false, owned
		}
	}
	return sum == slots, owned
}

// waitFair waits until the daemons share the slots fairly and checks that
// each owns what queue.Assign gives it; it returns how long that took.
func waitFair(t *testing.T, ds []*replica, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok, owned := fairShare(ds)
		if ok {
			break
		}
		if time.Since(start) > within {
			t.Fatalf("%s do not own %d slots fairly within %s: they own %v", ids(ds), slots, within, owned)
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	_, owned := fairShare(ds)
	assigned := assignment(ids(ds))
	for i, d := range ds {
		if want := countOf(assigned, d.id); owned[i] != want {
			t.Errorf("%s owns %d slots, queue.Assign gives it %d", d.id, owned[i], want)
		}
	}
	t.Logf("%d replicas own %v of %d slots, %s after the last change", len(ds), owned, slots, took.Round(time.Millisecond))
	return took
}

func ids(ds []*replica) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.id
	}
	slices.Sort(out)
	return out
}

func assignment(replicas []string) []string { return membership.Assign(replicas, topic, slots) }

func countOf(owners []string, id string) int {
	n := 0
	for _, o := range owners {
		if o == id {
			n++
		}
	}
	return n
}

// inflightKeys are the in-flight sets of the slots owners gives id.
func inflightKeys(prefix string, owners []string, id string) []string {
	var keys []string
	for s, o := range owners {
		if o == id {
			keys = append(keys, fmt.Sprintf("%s:{%s:%d}:inflight", prefix, topic, s))
		}
	}
	return keys
}

// inflight returns the members in flight in keys.
func inflight(ctx context.Context, rdb redis.UniversalClient, keys []string) ([]string, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.StringSliceCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.ZRange(ctx, k, 0, -1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read in-flight sets: %w", err)
	}
	var out []string
	for _, c := range cmds {
		out = append(out, c.Val()...)
	}
	return out, nil
}

// killHoldingLeases freezes d (SIGSTOP) at a moment it holds claimed,
// unconfirmed messages, reads them, and kills it with SIGKILL. It returns
// those messages, when d stopped and the deadline of its last heartbeat.
func killHoldingLeases(t *testing.T, b *backend, prefix string, d *replica, owners []string) (held []string, stopped, deadline time.Time) {
	t.Helper()
	ctx := context.Background()
	keys := inflightKeys(prefix, owners, d.id)
	giveUp := time.Now().Add(20 * time.Second)
	for {
		if time.Now().After(giveUp) {
			t.Fatalf("%s never held a claimed message in 20 s", d.id)
		}
		var err error
		held, err = inflight(ctx, b.rdb, keys)
		if err != nil {
			t.Fatal(err)
		}
		if len(held) == 0 {
			continue
		}
		if err := d.Signal(syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP %s: %v", d.id, err)
		}
		stopped = time.Now()
		// A stopped process cannot ack: what is in flight once Redis ran
		// the commands it had already sent is orphaned.
		time.Sleep(200 * time.Millisecond)
		held, err = inflight(ctx, b.rdb, keys)
		if err != nil {
			t.Fatal(err)
		}
		if len(held) == 0 {
			_ = d.Signal(syscall.SIGCONT) // acked in between: try again
			continue
		}
		ms, err := b.rdb.ZScore(ctx, prefix+":replicas", d.id).Result()
		if err != nil {
			t.Fatalf("heartbeat deadline of %s: %v", d.id, err)
		}
		d.Kill()
		return held, stopped, time.UnixMilli(int64(ms))
	}
}

// firstChanges waits until every daemon logged an ownership change since
// from (its log is read asynchronously) and returns each one's first.
func firstChanges(t *testing.T, ds []*replica, from time.Time) []ownershipChange {
	t.Helper()
	out := make([]ownershipChange, len(ds))
	e2etest.WaitFor(t, 10*time.Second, "every daemon logged its ownership change", func() bool {
		for i, d := range ds {
			c := d.changesSince(from)
			if len(c) == 0 {
				return false
			}
			out[i] = c[0]
		}
		return true
	})
	return out
}

// replicaRun is the whole run of TestThreeReplicas… on one backend.
type replicaRun struct {
	t        *testing.T
	b        *backend
	prefix   string
	mq       *e2etest.Rabbit
	p        *producer
	vars     map[string]string
	prewrite func() // runs after the first messages are written, before any daemon
}

// run: three replicas share 64 slots; one is killed holding leases, the two
// left take its slots within the heartbeat TTL and reap its leases; a fourth
// joins and only its share moves. Messages flow the whole time.
func (r *replicaRun) run() {
	t, b := r.t, r.b
	const already = 2000
	if err := r.p.write(context.Background(), 0, already, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if r.prewrite != nil {
		r.prewrite()
	}
	began := time.Now()
	r.p.start(t, r.p.plan.Len(), already, 30*time.Second, time.Second)

	// Three replicas.
	var ds []*replica
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		ds = append(ds, startReplica(t, b, id, r.vars))
	}
	waitFair(t, ds, 20*time.Second)
	three := assignment(ids(ds))
	time.Sleep(2 * time.Second) // messages flow through all three

	// SIGKILL one while it holds leases.
	victim := ds[2]
	orphans, stopped, deadline := killHoldingLeases(t, b, r.prefix, victim, three)
	ds = ds[:2]
	waitFair(t, ds, 20*time.Second)
	seen := time.Since(stopped)
	// When the survivors took over, by their logs.
	var tookOver time.Time
	for _, c := range firstChanges(t, ds, stopped) {
		if c.At.After(tookOver) {
			tookOver = c.At
		}
	}
	takeover := tookOver.Sub(stopped)
	t.Logf("killed %s holding %d leases: its last heartbeat expired %s after it stopped (TTL %s); the two left took its slots %s after it stopped (%s after the expiry); /metrics showed it %s after",
		victim.id, len(orphans), deadline.Sub(stopped).Round(time.Millisecond), heartbeatTTL,
		takeover.Round(time.Millisecond), tookOver.Sub(deadline).Round(time.Millisecond), seen.Round(time.Millisecond))
	// The survivors beat again the moment its heartbeat expires, at most a
	// TTL after it stopped; the slack covers a loaded machine.
	if limit := heartbeatTTL + time.Second; takeover > limit {
		t.Errorf("takeover took %s, more than the TTL %s + 1 s of slack", takeover, heartbeatTTL)
	}
	two := assignment(ids(ds))
	survivorsMoved := 0
	for s := range three {
		if three[s] != victim.id && two[s] != three[s] {
			survivorsMoved++
		}
	}
	t.Logf("losing %s moved %d slots: its %d and %d between the survivors", victim.id,
		countOf(three, victim.id)+survivorsMoved, countOf(three, victim.id), survivorsMoved)

	// Its leases are reaped by the new owners and delivered.
	e2etest.WaitFor(t, 30*time.Second, fmt.Sprintf("the %d leases of %s reaped", len(orphans), victim.id), func() bool {
		reaped := 0.0
		for _, d := range ds {
			reaped += d.counter(t, "delaybridge_reaped_total", topic)
		}
		return reaped >= float64(len(orphans))
	})
	e2etest.WaitFor(t, 30*time.Second, "the orphaned messages delivered", func() bool {
		for _, m := range orphans {
			if !r.mq.Arrived(e2etest.Number([]byte(m))) {
				return false
			}
		}
		return true
	})

	// A fourth joins: only its share should move.
	joined := time.Now()
	ds = append(ds, startReplica(t, b, "replica-d", r.vars))
	waitFair(t, ds, 20*time.Second)
	newcomer := ds[2]
	after := assignment(ids(ds))
	computed := 0
	for s := range two {
		if two[s] != after[s] {
			computed++
		}
	}
	observed, changes := 0, 0
	for _, c := range firstChanges(t, ds, joined) {
		observed += c.Gained
	}
	for _, d := range ds {
		changes += len(d.changesSince(joined))
	}
	share := countOf(after, newcomer.id)
	t.Logf("%s joined: %d slots moved (its share %d, %d between the others; queue.Assign predicts %d); %d ownership changes logged",
		newcomer.id, observed, share, observed-share, computed, changes)
	if observed != computed {
		t.Errorf("the daemons moved %d slots, queue.Assign predicts %d", observed, computed)
	}
	if changes != len(ds) {
		// A heartbeat delayed past the TTL on a starved machine: slots move
		// back and forth (claims stay atomic), worth seeing but not wrong.
		t.Logf("ownership flapped: %d changes after %s joined, one per replica (%d) expected", changes, newcomer.id, len(ds))
	}

	// Every message arrives.
	r.p.wait(t, 90*time.Second)
	n := r.p.plan.Len()
	e2etest.WaitFor(t, 90*time.Second, fmt.Sprintf("%d messages delivered", n), func() bool { return r.mq.Distinct() >= n })
	time.Sleep(3 * time.Second) // late duplicates (leases reaped after a slow confirm) show up
	t.Logf("all %d messages delivered %s after the first was written", n, time.Since(began).Round(time.Millisecond))
	stopAll(t, ds)
	o := r.p.plan.Count(r.mq.Deliveries(), nil)
	o.Check(t)
	t.Logf("%d duplicates after one SIGKILL with %d leases held (at-least-once)", o.Duplicates, len(orphans))

	// The killed replica's heartbeat expires; nothing else may be left.
	e2etest.WaitFor(t, 10*time.Second, "redis empty", func() bool { return len(e2etest.Keys(t, b.rdb, r.prefix)) == 0 })
}

// stopAll stops every replica with SIGTERM, as Kubernetes does, and fails
// the test unless each exits 0 in time.
func stopAll(t *testing.T, ds []*replica) {
	t.Helper()
	for _, d := range ds {
		if err := d.Stop(30 * time.Second); err != nil {
			t.Errorf("%s exit: %v", d.id, err)
		}
	}
}

func newReplicaRun(t *testing.T, b *backend, prefix string, n int) *replicaRun {
	mq := e2etest.NewTransientRabbit(t, prefix)
	mq.Consume(t)
	return &replicaRun{
		t: t, b: b, prefix: prefix, mq: mq,
		p: newProducer(b.rdb, prefix, n),
		// Short, so the killed replica's leases are reaped within seconds;
		// long enough that a confirm slowed by a loaded machine does not
		// expire too.
		vars: daemonVars(prefix, mq, 5*time.Second),
	}
}

func TestThreeReplicasShareSlotsSurviveSIGKILLAndMoveOnlyANewcomersShare(t *testing.T) {
	name := e2etest.Unique(t)
	b := standalone(t, name)
	newReplicaRun(t, b, name, 100_000).run()
}

func TestRedisClusterReplicasSpreadSlotsOverEveryMasterAndLoseNothing(t *testing.T) {
	name := e2etest.Unique(t)
	b := redisCluster(t, name)
	r := newReplicaRun(t, b, name, 100_000)
	r.prewrite = func() {
		// The first messages' 64 scheduled sets land on every master.
		ctx := context.Background()
		total := int64(0)
		perMaster := e2etest.KeysPerMaster(t, b.rdb, name)
		for addr := range e2etest.Masters(t, b.rdb) {
			keys := perMaster[addr]
			var msgs int64
			for _, k := range keys {
				msgs += b.rdb.ZCard(ctx, k).Val()
			}
			total += msgs
			t.Logf("master %s: %d keys, %d messages", addr, len(keys), msgs)
			if len(keys) == 0 || msgs == 0 {
				t.Errorf("master %s holds none of the topic's slots", addr)
			}
		}
		if total != 2000 {
			t.Errorf("the masters hold %d messages, 2000 were written", total)
		}
	}
	r.run()
}
