package cluster

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// The Sentinel deployment of TestSentinelFailoverMidStreamLosesNothing.
const (
	sentinelMaster   = "delaybridge-test"
	sentinelPassword = "sentinel-Vq93tz" // the sentinel's requirepass; the Redis nodes have none
	sentinelSlots    = 4
	// The in-flight bound is sentinelSlots × sentinelInflight × sentinelBatch
	// messages: what the daemon can hold claimed and unconfirmed at once.
	sentinelBatch    = 100
	sentinelInflight = 2
	sentinelLease    = 3 * time.Second
)

// sentinelSet is a master, its replica and one sentinel monitoring them.
type sentinelSet struct {
	master, replica, sentinel *e2etest.RedisServer
	// sc talks to the sentinel, logged in with its password.
	sc *redis.SentinelClient
}

// startSentinelSet starts a master, a replica of it and a sentinel that
// requires sentinelPassword, and returns once the replica is in sync and the
// sentinel knows both, so that SENTINEL FAILOVER can promote the replica.
// It fails the test when redis-server is not installed: a Sentinel test that
// skips would let Sentinel support break unseen.
func startSentinelSet(t *testing.T) *sentinelSet {
	t.Helper()
	ctx := t.Context()
	// No diskless-sync delay: the replica is in sync at once, not after 5 s.
	node := []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0"}
	s := &sentinelSet{}
	s.master = e2etest.StartRedisServer(t, "master", redis.Options{}, func(port int, dir string) []string {
		return append([]string{"--port", strconv.Itoa(port), "--dir", dir}, node...)
	})
	_, masterPort, _ := net.SplitHostPort(s.master.Addr)
	s.replica = e2etest.StartRedisServer(t, "replica", redis.Options{}, func(port int, dir string) []string {
		return append([]string{"--port", strconv.Itoa(port), "--dir", dir, "--replicaof", "127.0.0.1", masterPort}, node...)
	})
	// In sync before the sentinel starts: it discovers replicas from the
	// master's INFO, which it reads at once and then only every 10 s.
	waitInfo(t, s.replica, "replication", "master_link_status:up", 20*time.Second)

	// One sentinel, quorum 1. With requirepass it also demands a password
	// from other sentinels (and would send its own to them); the nodes have
	// none, so no `sentinel auth-pass` is needed.
	s.sentinel = e2etest.StartSentinel(t, sentinelMaster, s.master.Addr, sentinelPassword,
		"sentinel down-after-milliseconds "+sentinelMaster+" 1000",
		"sentinel failover-timeout "+sentinelMaster+" 5000")
	s.sc = redis.NewSentinelClient(&redis.Options{Addr: s.sentinel.Addr, Password: sentinelPassword})
	t.Cleanup(func() { _ = s.sc.Close() })

	// Without the password the sentinel refuses: the daemon below reaches
	// it only through DELAYBRIDGE_REDIS_SENTINEL_PASSWORD.
	anon := redis.NewSentinelClient(&redis.Options{Addr: s.sentinel.Addr, MaxRetries: -1})
	err := anon.Ping(ctx).Err()
	_ = anon.Close()
	if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("the sentinel answers without its password (err %v): the test would not exercise the sentinel password", err)
	}

	e2etest.WaitFor(t, 20*time.Second, "the sentinel names the master and sees its replica in sync", func() bool {
		if s.masterAddr(ctx) != s.master.Addr {
			return false
		}
		replicas, err := s.sc.Replicas(ctx, sentinelMaster).Result()
		if err != nil {
			return false
		}
		for _, r := range replicas {
			if net.JoinHostPort(r["ip"], r["port"]) == s.replica.Addr {
				return r["flags"] == "slave" && r["master-link-status"] == "ok"
			}
		}
		return false
	})
	return s
}

// masterAddr is the master the sentinel names now ("" when it cannot say).
func (s *sentinelSet) masterAddr(ctx context.Context) string {
	hp, err := s.sc.GetMasterAddrByName(ctx, sentinelMaster).Result()
	if err != nil || len(hp) != 2 {
		return ""
	}
	return net.JoinHostPort(hp[0], hp[1])
}

// client is a sentinel-aware client of the master, as an application would
// use. One connection, so that WAIT (which waits for the writes of its own
// connection) covers everything the test wrote.
func (s *sentinelSet) client(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:       sentinelMaster,
		SentinelAddrs:    []string{s.sentinel.Addr},
		SentinelPassword: sentinelPassword,
		PoolSize:         1,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("reach the master through the sentinel at %s: %v", s.sentinel.Addr, err)
	}
	return rdb
}

// waitInfo waits until INFO section of p holds line.
func waitInfo(t *testing.T, p *e2etest.RedisServer, section, line string, within time.Duration) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: p.Addr})
	defer c.Close()
	e2etest.WaitFor(t, within, fmt.Sprintf("%s INFO %s shows %s", p.Addr, section, line), func() bool {
		info, err := c.Info(t.Context(), section).Result()
		return err == nil && strings.Contains(info, line+"\r\n")
	})
}

// TestSentinelFailoverMidStreamLosesNothing runs the daemon against a
// Sentinel deployment whose sentinel requires a password, and has the
// sentinel promote the replica while messages fall due. The daemon follows
// the new master: nothing is lost, nothing is early, messages due after the
// failover (some written to the new master alone) arrive, and the new master
// ends empty. A failover may repeat messages (at-least-once): a claim or ack
// the old master had not replicated when the replica was promoted is undone,
// so the message is published again; the test bounds and logs them.
func TestSentinelFailoverMidStreamLosesNothing(t *testing.T) {
	ctx := t.Context()
	s := startSentinelSet(t)
	name := e2etest.Unique(t)
	rdb := s.client(t)
	mq := e2etest.NewTransientRabbit(t, name)
	mq.Consume(t)

	b := &backend{rdb: rdb, vars: map[string]string{
		// In Sentinel mode the URL gives only the database and the nodes'
		// credentials: its host is never dialled, so a dead one proves the
		// daemon finds the master through the sentinel.
		"DELAYBRIDGE_REDIS_URL":               "redis://127.0.0.1:1/0",
		"DELAYBRIDGE_REDIS_ADDRS":             s.sentinel.Addr,
		"DELAYBRIDGE_REDIS_SENTINEL_MASTER":   sentinelMaster,
		"DELAYBRIDGE_REDIS_SENTINEL_PASSWORD": sentinelPassword,
	}}
	vars := mq.TopicVars(name, topic, sentinelSlots)
	vars["DELAYBRIDGE_LEASE"] = sentinelLease.String()
	vars["DELAYBRIDGE_BATCH_SIZE"] = strconv.Itoa(sentinelBatch)
	vars["DELAYBRIDGE_MAX_INFLIGHT_BATCHES"] = strconv.Itoa(sentinelInflight)
	vars["DELAYBRIDGE_SHUTDOWN_TIMEOUT"] = "10s"
	d := startReplica(t, b, "sentinel-a", vars)

	// The first `before` messages fall due over 8 s; they are written
	// through the sentinel to the first master and replicated before the
	// failover. The `after` ones are written to the new master once the
	// sentinel names it.
	const before, after = 3000, 400
	plan := &e2etest.Plan{Due: make([]time.Time, before+after)}
	key := e2etest.ProducerKey(name, topic, sentinelSlots)
	write := func(c redis.UniversalClient, from, to int, first time.Time, spread time.Duration) {
		t.Helper()
		numbers := make([]int, 0, to-from)
		for i := from; i < to; i++ {
			plan.Due[i] = first.Add(spread * time.Duration(i-from) / time.Duration(to-from)).Truncate(time.Millisecond)
			numbers = append(numbers, i)
		}
		if err := plan.Write(ctx, c, key, e2etest.RawMember, numbers); err != nil {
			t.Fatalf("schedule messages %d-%d: %v", from, to-1, err)
		}
	}
	start := time.Now().Add(time.Second)
	write(rdb, 0, before, start, 8*time.Second)
	if n, err := rdb.Do(ctx, "WAIT", 1, 2000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 2000 = %d, %v: the replica does not hold the scheduled messages", n, err)
	}

	// Mid-stream, promote the replica.
	time.Sleep(time.Until(start.Add(4 * time.Second)))
	triggered := time.Now()
	if err := s.sc.Failover(ctx, sentinelMaster).Err(); err != nil {
		t.Fatalf("SENTINEL FAILOVER %s: %v", sentinelMaster, err)
	}
	e2etest.WaitFor(t, 15*time.Second, "the sentinel names the former replica as master", func() bool {
		return s.masterAddr(ctx) == s.replica.Addr
	})
	switched := time.Now()
	t.Logf("failover: the sentinel named %s master %s after SENTINEL FAILOVER", s.replica.Addr, switched.Sub(triggered).Round(time.Millisecond))
	// Straight to the new master: a sentinel-aware client may still write
	// to the old one until it hears of the switch, and those writes are
	// lost when the sentinel turns the old master into a replica.
	newMaster := redis.NewClient(&redis.Options{Addr: s.replica.Addr})
	defer newMaster.Close()
	write(newMaster, before, before+after, time.Now().Add(500*time.Millisecond), 1500*time.Millisecond)

	n := plan.Len()
	e2etest.WaitFor(t, 30*time.Second, fmt.Sprintf("%d messages delivered", n), func() bool { return mq.Distinct() >= n })
	// Acks the promotion undid leave messages in flight until their lease
	// expires and the reaper returns them: wait for that, so their
	// duplicates are counted.
	e2etest.WaitFor(t, 3*sentinelLease+5*time.Second, "the new master holds no scheduled or in-flight message", func() bool {
		for _, k := range e2etest.Keys(t, newMaster, name) {
			if k != name+":replicas" && k != name+":replicas:topics" { // the live replica set and what each forwards
				return false
			}
		}
		return true
	})
	time.Sleep(500 * time.Millisecond) // the last publishes reach the consumer
	reaped := d.counter(t, "delaybridge_reaped_total", topic)
	if err := d.Stop(30 * time.Second); err != nil {
		t.Errorf("daemon exit after SIGTERM: %v", err)
	}
	if strings.Contains(d.Log(), sentinelPassword) {
		t.Errorf("the daemon's log shows the sentinel password")
	}

	got := mq.Deliveries()
	o := plan.Count(got, nil)
	o.Check(t)

	dueAfter := 0
	for _, due := range plan.Due {
		if due.After(switched) {
			dueAfter++
		}
	}
	t.Logf("%d messages due after the sentinel named the new master (%d written to it alone) were delivered: the daemon followed it", dueAfter, after)
	if dueAfter < after {
		t.Fatalf("only %d messages due after the failover: the test proves nothing about following the new master", dueAfter)
	}

	checkFailoverDuplicates(t, plan, got, o.Duplicates, triggered, switched, reaped)

	// The new master is the one the sentinel names and ends with none of
	// the test's keys: the daemon's clean exit removed its heartbeat too.
	if info := newMaster.Info(ctx, "replication").Val(); !strings.Contains(info, "role:master\r\n") {
		t.Errorf("%s is not a master after the failover:\n%s", s.replica.Addr, info)
	}
	e2etest.WaitFor(t, 10*time.Second, "the new master holds none of the test's keys", func() bool {
		return len(e2etest.Keys(t, newMaster, name)) == 0
	})
}

// checkFailoverDuplicates bounds the duplicates a failover may cause. A
// message is published twice only when the promoted replica had not received
// the claim or the ack of its first publish: it was then in flight at the
// promotion (at most the in-flight bound), or claimed from the old master
// between the promotion and the daemon's switch to the new one, so due
// before the switch (slack: the daemon hears of it a little after the
// test, and claims a little after the due time). Every repeat carries the
// message's id.
func checkFailoverDuplicates(t *testing.T, plan *e2etest.Plan, got []e2etest.Delivery, duplicates int, triggered, switched time.Time, reaped float64) {
	t.Helper()
	const slack = 2 * time.Second
	inflightBound := sentinelSlots * sentinelInflight * sentinelBatch
	window := 0
	for _, due := range plan.Due {
		if !due.Before(triggered) && !due.After(switched.Add(slack)) {
			window++
		}
	}
	seen := map[int]int{}
	ids := map[int]string{}
	var repeated []int
	for _, dl := range got {
		i := e2etest.Number(dl.Body)
		if i < 0 {
			continue
		}
		if seen[i]++; seen[i] == 2 {
			repeated = append(repeated, i)
		}
		if id, ok := ids[i]; ok && id != dl.ID {
			t.Errorf("message %d delivered with ids %q and %q", i, id, dl.ID)
		}
		ids[i] = dl.ID
	}
	slices.Sort(repeated)
	var lateDup []string
	for _, i := range repeated {
		if plan.Due[i].After(switched.Add(slack)) && len(lateDup) < 10 {
			lateDup = append(lateDup, fmt.Sprintf("%d (due %s after the switch)", i, plan.Due[i].Sub(switched).Round(time.Millisecond)))
		}
	}
	var span string
	if len(repeated) > 0 {
		first, last := plan.Due[repeated[0]], plan.Due[repeated[0]]
		for _, i := range repeated {
			if due := plan.Due[i]; due.Before(first) {
				first = due
			} else if due.After(last) {
				last = due
			}
		}
		span = fmt.Sprintf(", due from %s to %s relative to SENTINEL FAILOVER",
			first.Sub(triggered).Round(time.Millisecond), last.Sub(triggered).Round(time.Millisecond))
	}
	t.Logf("failover duplicates: %d deliveries of %d messages%s; %d leases reaped; bound %d (in flight %d + due during the failover %d)",
		duplicates, len(repeated), span, int(reaped), inflightBound+window, inflightBound, window)
	if duplicates > inflightBound+window {
		t.Errorf("%d duplicates, more than the %d messages in flight or due while the sentinel switched masters", duplicates, inflightBound+window)
	}
	if len(lateDup) > 0 {
		t.Errorf("messages due after the daemon followed the new master were delivered twice: %s", strings.Join(lateDup, ", "))
	}
}
