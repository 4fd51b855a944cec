package chaos

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/faultproxy"
	"github.com/delaybridge/delaybridge/queue"
)

// topicName is the topic every scenario uses, under a prefix of its own.
const topicName = "orders"

// Pipeline sizes of most scenarios: small batches, so a backlog spans many
// claims and the in-flight bound is meaningful.
const (
	batchSize    = 50
	inflightMax  = 2
	defaultSlots = 4
)

// bridge is one scenario's world: a key prefix with one topic, a RabbitMQ
// exchange and queue, and the daemon's variables.
type bridge struct {
	t     *testing.T
	name  string
	rdb   *redis.Client // straight to Redis, never through a proxy
	topic queue.Topic
	mq    *e2etest.Rabbit
	vars  map[string]string
	// binary is the daemon the bridge starts (default: the race build).
	binary string
}

// newBridge prepares a topic of slots slots on the test Redis, delivered to a
// queue declared with queueArgs, and the daemon variables that connect them.
func newBridge(t *testing.T, slots int, queueArgs amqp.Table) *bridge {
	t.Helper()
	name := e2etest.Unique(t)
	return newBridgeOn(t, name, slots, e2etest.NewRabbit(t, name, queueArgs), e2etest.AMQPURL())
}

// newBridgeOn is newBridge with the exchange and queue mq (named name) on
// the broker at amqpURL.
func newBridgeOn(t *testing.T, name string, slots int, mq *e2etest.Rabbit, amqpURL string) *bridge {
	t.Helper()
	b := &bridge{
		t:      t,
		name:   name,
		rdb:    e2etest.ConnectRedis(t, name),
		topic:  queue.Topic{Name: topicName, Prefix: name, Slots: slots},
		mq:     mq,
		binary: binary,
	}
	b.vars = map[string]string{
		"DELAYBRIDGE_REDIS_URL":                e2etest.RedisURL(),
		"DELAYBRIDGE_AMQP_URL":                 amqpURL,
		"DELAYBRIDGE_KEY_PREFIX":               name,
		"DELAYBRIDGE_TOPICS":                   topicName,
		"DELAYBRIDGE_TOPIC_ORDERS_SLOTS":       strconv.Itoa(slots),
		"DELAYBRIDGE_TOPIC_ORDERS_EXCHANGE":    b.mq.Exchange,
		"DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEY": b.mq.Queue,
		"DELAYBRIDGE_BATCH_SIZE":               strconv.Itoa(batchSize),
		"DELAYBRIDGE_MAX_INFLIGHT_BATCHES":     strconv.Itoa(inflightMax),
		"DELAYBRIDGE_HEARTBEAT_INTERVAL":       "200ms",
		"DELAYBRIDGE_HEARTBEAT_TTL":            "1s",
		"DELAYBRIDGE_REPLICA_ID":               name,
	}
	return b
}

// set overrides daemon variables.
func (b *bridge) set(kv ...string) *bridge {
	for i := 0; i+1 < len(kv); i += 2 {
		b.vars[kv[i]] = kv[i+1]
	}
	return b
}

// start runs a daemon with the bridge's variables.
func (b *bridge) start() *e2etest.Daemon {
	b.t.Helper()
	return e2etest.Start(b.t, b.binary, b.vars)
}

// inflightBound is the most messages the daemon may hold claimed and
// unconfirmed: slots × MAX_INFLIGHT_BATCHES × BATCH_SIZE.
func (b *bridge) inflightBound() int {
	return b.topic.SlotCount() * atoi(b.vars["DELAYBRIDGE_MAX_INFLIGHT_BATCHES"]) * atoi(b.vars["DELAYBRIDGE_BATCH_SIZE"])
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// proxy starts a fault proxy in front of target for the rest of the test.
func proxy(t *testing.T, target string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(context.Background(), target)
	if err != nil {
		t.Fatalf("fault proxy to %s: %v", target, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// redisBehind points the daemon's Redis at a fault proxy and returns it.
func (b *bridge) redisBehind() *faultproxy.Proxy {
	p := proxy(b.t, e2etest.HostPort(b.t, e2etest.RedisURL()))
	b.vars["DELAYBRIDGE_REDIS_URL"] = e2etest.WithHost(b.t, e2etest.RedisURL(), p.Addr())
	return p
}

// amqpBehind points the daemon's RabbitMQ at a fault proxy and returns it.
func (b *bridge) amqpBehind() *faultproxy.Proxy {
	p := proxy(b.t, e2etest.HostPort(b.t, e2etest.AMQPURL()))
	b.vars["DELAYBRIDGE_AMQP_URL"] = e2etest.WithHost(b.t, e2etest.AMQPURL(), p.Addr())
	return p
}

// settle waits until every message of the plan was delivered (or, with
// deadOK, dead-lettered with a reason), then a little longer for
// duplicates to show. It fails the test after within.
func (b *bridge) settle(plan *e2etest.Plan, deliveries func() []e2etest.Delivery, deadOK bool, within time.Duration, topics ...queue.Topic) {
	b.t.Helper()
	if len(topics) == 0 {
		topics = []queue.Topic{b.topic}
	}
	var missing int
	deadline := time.Now().Add(within)
	for {
		var dead map[int]string
		if deadOK {
			dead, _ = e2etest.DeadNumbers(b.t, b.rdb, topics...)
		}
		o := plan.Count(deliveries(), dead)
		missing = o.Lost
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.t.Logf("still missing %d of %d messages after %s, first: %v", missing, plan.Len(), within, o.LostNumbers)
			for _, t := range topics {
				b.logBacklog(t)
			}
			return // the count that follows fails the test with the details
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // late duplicates show
}

// logBacklog logs what Redis still holds of t, to explain a missing message.
func (b *bridge) logBacklog(t queue.Topic) {
	ctx := context.Background()
	for slot := range t.SlotCount() {
		k := t.Keys(slot)
		sched, _ := b.rdb.ZCard(ctx, k.Scheduled).Result()
		infl, _ := b.rdb.ZCard(ctx, k.Inflight).Result()
		dead, _ := b.rdb.ZCard(ctx, k.Dead).Result()
		b.t.Logf("%s slot %d: scheduled %d, inflight %d, dead %d", t.Name, slot, sched, infl, dead)
	}
}

// stop stops the daemon with SIGTERM and fails the test unless it exits 0.
func stop(t *testing.T, d *e2etest.Daemon) {
	t.Helper()
	if err := d.Stop(45 * time.Second); err != nil {
		t.Errorf("daemon exit after SIGTERM: %v", err)
	}
}

// expectDrained fails the test if the topics' keys hold anything but dead
// letters (and the replica set) once everything settled.
func (b *bridge) expectDrained(topics ...queue.Topic) {
	b.t.Helper()
	if len(topics) == 0 {
		topics = []queue.Topic{b.topic}
	}
	ctx := context.Background()
	for _, t := range topics {
		for slot := range t.SlotCount() {
			k := t.Keys(slot)
			for _, key := range []string{k.Scheduled, k.Inflight, k.Due, k.Attempts} {
				if n, err := b.rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
					b.t.Errorf("%s still exists after everything settled (%v)", key, err)
				}
			}
		}
	}
}

// sampleEvery runs fn every interval until ctx ends; the returned func
// waits for the sampler to stop.
func sampleEvery(ctx context.Context, interval time.Duration, fn func(context.Context)) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			fn(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { <-done }
}

// until sleeps until at (or returns at once when it passed).
func until(at time.Time) { time.Sleep(time.Until(at)) }

// ms formats a duration for notes.
func ms(d time.Duration) string { return fmt.Sprint(d.Round(time.Millisecond)) }
