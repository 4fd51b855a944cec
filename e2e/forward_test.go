package e2e

import (
	"context"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// plan is a numbered set of messages scheduled for one test.
type plan struct {
	prefix, topic string
	slots         int
	due           map[int]time.Time // message number → due time (after reschedules)
	cancelled     map[int]bool
	rescheduled   map[int]bool
}

func member(n int) string { return fmt.Sprintf(`{"n":%d,"pad":"%s"}`, n, strings.Repeat("x", 64)) }

func number(body string) int {
	s := strings.TrimPrefix(body, `{"n":`)
	i := strings.IndexByte(s, ',')
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil {
		return -1
	}
	return n
}

func (p *plan) key(m string) string {
	slot := crc32.ChecksumIEEE([]byte(m)) & uint32(p.slots-1)
	return fmt.Sprintf("%s:{%s:%d}", p.prefix, p.topic, slot)
}

// schedule writes n messages due spread evenly over [from, from+spread).
func schedule(t *testing.T, rdb *redis.Client, p *plan, n int, from time.Time, spread time.Duration) {
	t.Helper()
	p.due = map[int]time.Time{}
	p.cancelled = map[int]bool{}
	p.rescheduled = map[int]bool{}
	ctx := context.Background()
	pipe := rdb.Pipeline()
	for i := range n {
		due := from.Add(spread * time.Duration(i) / time.Duration(n)).Truncate(time.Millisecond)
		p.due[i] = due
		pipe.ZAdd(ctx, p.key(member(i)), redis.Z{Score: float64(due.UnixMilli()), Member: member(i)})
		if pipe.Len() >= 1000 {
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// cancelAndReschedule cancels 5% and moves 5% one second later, all before
// they fall due.
func cancelAndReschedule(t *testing.T, rdb *redis.Client, p *plan, n int) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, i := range rng.Perm(n)[:n/10] {
		if time.Until(p.due[i]) < 300*time.Millisecond {
			continue // too close to its due time to be sure it is not claimed yet
		}
		m := member(i)
		if len(p.cancelled) < n/20 {
			removed, err := rdb.ZRem(ctx, p.key(m), m).Result()
			if err != nil || removed != 1 {
				t.Fatalf("cancel %d: %d %v", i, removed, err)
			}
			p.cancelled[i] = true
			continue
		}
		later := p.due[i].Add(time.Second)
		if err := rdb.ZAdd(ctx, p.key(m), redis.Z{Score: float64(later.UnixMilli()), Member: m}).Err(); err != nil {
			t.Fatal(err)
		}
		p.due[i] = later
		p.rescheduled[i] = true
	}
}

// verdict checks every delivery against the plan: lost must be 0, early must
// be 0, cancelled must never arrive; it returns the duplicates.
func verdict(t *testing.T, p *plan, n int, got []delivery) (dups int) {
	t.Helper()
	seen := map[int]int{}
	early, cancelled, bad := 0, 0, 0
	for _, d := range got {
		i := number(d.body)
		if i < 0 || i >= n {
			bad++
			continue
		}
		seen[i]++
		if p.cancelled[i] {
			cancelled++
		}
		if d.at.Before(p.due[i]) {
			early++
			if early < 5 {
				t.Errorf("message %d received %s before its due time", i, p.due[i].Sub(d.at))
			}
		}
		if d.due != p.due[i].UnixMilli() {
			bad++
			if bad < 5 {
				t.Errorf("message %d: x-delaybridge-due %d, want %d", i, d.due, p.due[i].UnixMilli())
			}
		}
	}
	lost := 0
	for i := range n {
		if p.cancelled[i] {
			continue
		}
		switch c := seen[i]; {
		case c == 0:
			lost++
		case c > 1:
			dups += c - 1
		}
	}
	t.Logf("messages %d, cancelled %d, rescheduled %d, delivered %d, lost %d, early %d, duplicates %d",
		n, len(p.cancelled), len(p.rescheduled), len(got), lost, early, dups)
	if lost != 0 || early != 0 || cancelled != 0 || bad != 0 {
		t.Fatalf("lost %d, early %d, cancelled but delivered %d, malformed %d", lost, early, cancelled, bad)
	}
	return dups
}

func expected(p *plan, n int) int { return n - len(p.cancelled) }

func TestEveryMessageArrivesOnceNeverEarlyWithCancelsAndReschedules(t *testing.T) {
	t.Parallel()
	name := uniq(t)
	rdb := connectRedis(t, name)
	mq := newRabbit(t, name)
	p := &plan{prefix: name, topic: "orders", slots: 8}
	const n = 20000
	schedule(t, rdb, p, n, time.Now().Add(2*time.Second), 4*time.Second)
	d := startDaemon(t, map[string]string{
		"DELAYBRIDGE_KEY_PREFIX":               name,
		"DELAYBRIDGE_TOPICS":                   "orders",
		"DELAYBRIDGE_TOPIC_ORDERS_SLOTS":       "8",
		"DELAYBRIDGE_TOPIC_ORDERS_EXCHANGE":    mq.Exchange,
		"DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEY": mq.Queue,
		"DELAYBRIDGE_REPLICA_ID":               name,
		"DELAYBRIDGE_HEARTBEAT_INTERVAL":       "200ms",
		"DELAYBRIDGE_HEARTBEAT_TTL":            "1s",
	})
	cancelAndReschedule(t, rdb, p, n)
	want := expected(p, n)
	waitFor(t, 60*time.Second, fmt.Sprintf("%d deliveries", want), func() bool { return len(mq.deliveries()) >= want })
	time.Sleep(1500 * time.Millisecond) // would-be duplicates and cancelled ones have time to show
	if err := d.stop(30 * time.Second); err != nil {
		t.Errorf("daemon exit: %v", err)
	}
	if dups := verdict(t, p, n, mq.deliveries()); dups != 0 {
		t.Errorf("%d duplicates without any crash", dups)
	}
	for _, got := range mq.deliveries() {
		if p.rescheduled[number(got.body)] && got.at.Before(p.due[number(got.body)]) {
			t.Errorf("rescheduled message %s arrived before its new time", got.body)
		}
	}
	if left := leftKeys(t, rdb, name); len(left) != 0 {
		t.Errorf("redis still holds %v", left)
	}
}

func TestKillNineWhileMessagesFallDueLosesNothing(t *testing.T) {
	t.Parallel()
	name := uniq(t)
	rdb := connectRedis(t, name)
	mq := newRabbit(t, name)
	p := &plan{prefix: name, topic: "orders", slots: 8}
	const n = 20000
	schedule(t, rdb, p, n, time.Now().Add(2*time.Second), 6*time.Second)
	vars := map[string]string{
		"DELAYBRIDGE_KEY_PREFIX":               name,
		"DELAYBRIDGE_TOPICS":                   "orders",
		"DELAYBRIDGE_TOPIC_ORDERS_SLOTS":       "8",
		"DELAYBRIDGE_TOPIC_ORDERS_EXCHANGE":    mq.Exchange,
		"DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEY": mq.Queue,
		"DELAYBRIDGE_LEASE":                    "1s",
		"DELAYBRIDGE_HEARTBEAT_INTERVAL":       "200ms",
		"DELAYBRIDGE_HEARTBEAT_TTL":            "1s",
	}
	cancelAndReschedule(t, rdb, p, n)
	kills := 0
	// At least four kills even when a loaded machine made scheduling slow.
	for kills < 4 || time.Now().Before(p.due[n-1].Add(-500*time.Millisecond)) {
		d := startDaemon(t, vars)
		time.Sleep(time.Duration(400+rand.IntN(600)) * time.Millisecond)
		d.cmd.Process.Signal(syscall.SIGKILL)
		d.kill()
		kills++
	}
	d := startDaemon(t, vars)
	want := expected(p, n)
	waitFor(t, 90*time.Second, fmt.Sprintf("%d deliveries after %d kills", want, kills), func() bool {
		seen := map[int]bool{}
		for _, g := range mq.deliveries() {
			seen[number(g.body)] = true
		}
		return len(seen) >= want
	})
	time.Sleep(2 * time.Second) // leases of the last killed daemon are reaped: duplicates show
	if err := d.stop(30 * time.Second); err != nil {
		t.Errorf("daemon exit: %v", err)
	}
	dups := verdict(t, p, n, mq.deliveries())
	t.Logf("%d SIGKILLs: %d duplicates (at-least-once)", kills, dups)
	if kills < 3 {
		t.Errorf("only %d kills happened", kills)
	}
	// The killed replicas' heartbeats expire; nothing else may be left.
	waitFor(t, 10*time.Second, "redis empty", func() bool {
		left := leftKeys(t, rdb, name)
		return len(left) == 0 || (len(left) == 1 && left[0] == name+":replicas")
	})
}
