package forwarder

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// TestReplicaCutOffFromRedisStopsScanningWithinTTL stalls the replica's
// connections to Redis (packets go nowhere, as in a network partition): the
// heartbeat cannot succeed, so the replica must give up its slots about one
// TTL later, when the others take them, and take them back once Redis
// answers again.
func TestReplicaCutOffFromRedisStopsScanningWithinTTL(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	proxy, rdb := proxiedRedis(t, nil)

	topic := queue.Topic{Name: "orders", Prefix: prefix, Slots: 8}
	m := NewMetrics(prometheus.NewRegistry())
	const ttl = 500 * time.Millisecond
	f, stop := startF(t, Options{
		Queue: queue.New(rdb), Topics: []Topic{{topic, newRecordSink()}}, KeyPrefix: prefix,
		ReplicaID: "a", HeartbeatInterval: 100 * time.Millisecond, HeartbeatTTL: ttl, Metrics: m,
		ShutdownTimeout: time.Second,
	}, watchHeartbeats)
	owned := func() int { return ownedSlots(t, m, "orders") }
	waitPasses(t, f.ownership.passed, 10*time.Second, "owns all 8 slots", func() bool { return owned() == 8 })

	proxy.Stall()
	stalled := time.Now()
	// Before, a hung heartbeat waited interval + 5 s before it failed.
	waitPasses(t, f.ownership.passed, 3*time.Second, "scanners stopped after the heartbeat was lost", func() bool { return owned() == 0 })
	t.Logf("stopped scanning %s after Redis stalled (TTL %s)", time.Since(stalled).Round(time.Millisecond), ttl)

	proxy.Restore()
	waitPasses(t, f.ownership.passed, 15*time.Second, "owns all 8 slots again", func() bool { return owned() == 8 })
	if set, err := membership.New(q).Heartbeat(context.Background(), prefix, "observer", time.Second); err != nil || len(set.Live) != 2 {
		t.Errorf("replica set %v, %v: want a and the observer", set.Live, err)
	}
	if err := stop(); err != nil {
		t.Errorf("run: %v", err)
	}
}

// TestHeartbeatDoesNotQueueBehindTheDataPathsConnections holds the only
// connection of Queue's pool (as claims and acks queued for one do under
// load: half a second on two cores, past a test's 1 s TTL on CI): the
// heartbeat goes through HeartbeatQueue's own pool, so the replica stays
// live and keeps its slots for several TTLs.
func TestHeartbeatDoesNotQueueBehindTheDataPathsConnections(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	opt := redistest.Options(t)
	opt.PoolSize, opt.PoolTimeout = 1, 50*time.Millisecond
	data := redis.NewClient(opt)
	t.Cleanup(func() { data.Close() })

	topic := queue.Topic{Name: "orders", Prefix: prefix, Slots: 8}
	m := NewMetrics(prometheus.NewRegistry())
	const ttl = 500 * time.Millisecond
	f, stop := startF(t, Options{
		Queue: queue.New(data), HeartbeatQueue: q, Topics: []Topic{{topic, newRecordSink()}}, KeyPrefix: prefix,
		ReplicaID: "a", HeartbeatInterval: 100 * time.Millisecond, HeartbeatTTL: ttl, Metrics: m,
		ShutdownTimeout: time.Second,
	}, watchHeartbeats)
	owned := func() int { return ownedSlots(t, m, "orders") }
	waitPasses(t, f.ownership.passed, 10*time.Second, "owns all 8 slots", func() bool { return owned() == 8 })

	ctx := context.Background()
	held := data.Conn()
	if err := held.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(4 * ttl); time.Now().Before(end); time.Sleep(ttl / 5) {
		if set, err := membership.New(q).Replicas(ctx, prefix); err != nil || !slices.Contains(set.Live, "a") {
			t.Fatalf("replica a not live while Queue's pool is held: %v, %v", set.Live, err)
		}
		if n := owned(); n != 8 {
			t.Fatalf("replica a owns %d slots while Queue's pool is held, want 8", n)
		}
	}
	held.Close()
	if err := stop(); err != nil {
		t.Errorf("run: %v", err)
	}
}

// TestSlotRegainedWhileItsScannerDrainsKeepsTheInflightBound loses the
// heartbeat for a TTL while the broker holds every confirm: the slot's
// scanner stops and drains (its batches wait for their confirms), and the
// slot comes back to this replica when Redis answers again. The new scanner
// must not claim beside the draining one: the slot's claimed messages stay
// within MaxInflightBatches×BatchSize (seen at 760 against 400 in a chaos
// run), and the slot's messages are still published in score order.
func TestSlotRegainedWhileItsScannerDrainsKeepsTheInflightBound(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	proxy, rdb := proxiedRedis(t, nil)

	topic := queue.Topic{Name: "orders", Prefix: prefix, Slots: 1}
	scheduleNumbered(t, q, topic, 60, time.Now().Add(-time.Second))
	sink := newHeldSink()
	m := NewMetrics(prometheus.NewRegistry())
	const batch, batches = 10, 2
	f, _ := startF(t, Options{
		Queue: queue.New(rdb), Topics: []Topic{{topic, sink}}, KeyPrefix: prefix,
		ReplicaID: "a", HeartbeatInterval: 100 * time.Millisecond, HeartbeatTTL: 500 * time.Millisecond,
		BatchSize: batch, MaxInflightBatches: batches, PollInterval: 20 * time.Millisecond,
		ShutdownTimeout: 20 * time.Second, Metrics: m,
	}, watchHeartbeats)
	owned := func() int { return ownedSlots(t, m, "orders") }
	inflight := func() int64 {
		n, err := q.Client().ZCard(context.Background(), topic.Keys(0).Inflight).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	eventually(t, 10*time.Second, "two batches claimed and started", func() bool {
		got, _ := sink.bodies()
		return len(got) == batch*batches && inflight() == batch*batches
	})

	proxy.Stall()
	waitPasses(t, f.ownership.passed, 5*time.Second, "scanner stopped after the heartbeat was lost", func() bool { return owned() == 0 })
	proxy.Restore()
	waitPasses(t, f.ownership.passed, 15*time.Second, "slot owned again", func() bool { return owned() == 1 })
	// The old scanner drains for up to ShutdownTimeout while the broker
	// holds its confirms; a new scanner claiming beside it would have
	// claimed within a poll interval.
	for range 50 {
		if n := inflight(); n > batch*batches {
			t.Fatalf("%d messages claimed after the slot came back while its old scanner drained, more than %d×%d", n, batches, batch)
		}
		if got, _ := sink.bodies(); len(got) > batch*batches {
			t.Fatalf("%d messages started after the slot came back, more than %d×%d", len(got), batches, batch)
		}
		time.Sleep(20 * time.Millisecond)
	}

	close(sink.release)
	eventually(t, 20*time.Second, "every message published", func() bool {
		got, _ := sink.bodies()
		return len(got) >= 60
	})
	eventually(t, 10*time.Second, "redis empty after acks", func() bool { return len(keysLeft(t, q, prefix)) == 0 })
	got, _ := sink.bodies()
	if len(got) != 60 {
		t.Fatalf("published %d messages, want 60 (once each)", len(got))
	}
	for i, b := range got {
		if want := fmt.Sprintf("m%02d", i); b != want {
			t.Fatalf("message %d is %s, want %s (score order)", i, b, want)
		}
	}
}

// ownedSlots is what delaybridge_owned_slots shows for topic.
func ownedSlots(t *testing.T, m *Metrics, topic string) int {
	t.Helper()
	var g dto.Metric
	if err := m.Owned.WithLabelValues(topic).Write(&g); err != nil {
		t.Fatal(err)
	}
	return int(g.GetGauge().GetValue())
}

// watchHeartbeats has ownership signal each heartbeat it applied, for
// waitPasses.
func watchHeartbeats(f *Forwarder) { f.ownership.passed = make(passes, 1) }
