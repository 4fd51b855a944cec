package intake

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestAMQPIntakeAcksOnlyWhatTheReplicaConfirmed: with WAIT_REPLICAS 1 and
// the replica's link held, the intake acks nothing (the messages stay with
// RabbitMQ, requeued); with the link back, each is scheduled once, on the
// replica too.
func TestAMQPIntakeAcksOnlyWhatTheReplicaConfirmed(t *testing.T) {
	rep := e2etest.StartReplicated(t)
	rdb := redis.NewClient(&redis.Options{Addr: rep.Master.Addr})
	replica := redis.NewClient(&redis.Options{Addr: rep.Replica.Addr})
	t.Cleanup(func() { _ = rdb.Close(); _ = replica.Close() })
	reg := prometheus.NewRegistry()
	f := &fixture{rdb: rdb, topic: queue.Topic{Name: "orders", Prefix: "dur", Slots: 2, Format: queue.FormatEnvelope}, reg: reg, metrics: NewMetrics(reg)}
	r := newRabbit(t)
	q := queue.New(rdb).WithDurability(queue.Durability{Replicas: 1, Timeout: 500 * time.Millisecond})
	in, err := NewAMQP(AMQPConfig{URL: amqpURL(), Queue: r.Queue, Prefetch: 32, LagInterval: 200 * time.Millisecond},
		Target{Topic: f.topic}, q, f.metrics, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	rep.Link.Stall()
	run(t, in.Run)
	const n = 5
	for i := range n {
		r.publish(t, "k", amqp091.Publishing{MessageId: fmt.Sprintf("m%d", i), Headers: amqp091.Table{"x-delay": 3600000}, Body: []byte("v")})
	}
	time.Sleep(3 * time.Second)
	if got := f.counter(f.metrics.Scheduled, "orders"); got != 0 {
		t.Fatalf("with the link held the intake counted %v scheduled (acked), want 0", got)
	}
	if got := f.counter(f.metrics.Received, "orders"); got < n {
		t.Fatalf("the intake received %v, want at least %d (it must have tried)", got, n)
	}

	rep.Link.Restore()
	waitFor(t, 30*time.Second, "every message acked once the replica confirms", func() bool {
		return f.counter(f.metrics.Scheduled, "orders") >= n && r.depth(t, r.Queue) == 0
	})
	for name, c := range map[string]*redis.Client{"master": rdb, "replica": replica} {
		var total int64
		for s := range f.topic.SlotCount() {
			k, err := c.ZCard(context.Background(), f.topic.Keys(s).Scheduled).Result()
			if err != nil {
				t.Fatal(err)
			}
			total += k
		}
		if total != n {
			t.Errorf("the %s holds %d messages, want %d (each id once)", name, total, n)
		}
	}
}

// TestAMQPIntakeDeadLettersNothingWhileAcceptanceStops: with WAIT_REPLICAS
// 1 and the replica's link held, a malformed message (a bad x-delay) stays
// with RabbitMQ like a good one: the intake neither acks it nor counts it
// dead-lettered, since a dead-lettering it acked unreplicated is lost by a
// failover. With the link back, each is in the dead set, on the replica too.
func TestAMQPIntakeDeadLettersNothingWhileAcceptanceStops(t *testing.T) {
	rep := e2etest.StartReplicated(t)
	rdb := redis.NewClient(&redis.Options{Addr: rep.Master.Addr})
	replica := redis.NewClient(&redis.Options{Addr: rep.Replica.Addr})
	t.Cleanup(func() { _ = rdb.Close(); _ = replica.Close() })
	reg := prometheus.NewRegistry()
	f := &fixture{rdb: rdb, topic: queue.Topic{Name: "orders", Prefix: "durdead", Slots: 2, Format: queue.FormatEnvelope}, reg: reg, metrics: NewMetrics(reg)}
	r := newRabbit(t)
	q := queue.New(rdb).WithDurability(queue.Durability{Replicas: 1, Timeout: 500 * time.Millisecond})
	in, err := NewAMQP(AMQPConfig{URL: amqpURL(), Queue: r.Queue, Prefetch: 32, LagInterval: 200 * time.Millisecond},
		Target{Topic: f.topic}, q, f.metrics, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	rep.Link.Stall()
	run(t, in.Run)
	const n = 4
	for i := range n {
		r.publish(t, "k", amqp091.Publishing{MessageId: fmt.Sprintf("bad%d", i), Headers: amqp091.Table{"x-delay": "soon"}, Body: []byte("v")})
	}
	time.Sleep(3 * time.Second)
	if got := f.counter(f.metrics.Rejected, "orders", ReasonBadDelay); got != 0 {
		t.Fatalf("with the link held the intake dead-lettered (and acked) %v messages, want 0", got)
	}
	if got := f.counter(f.metrics.Received, "orders"); got < n {
		t.Fatalf("the intake received %v, want at least %d (it must have tried)", got, n)
	}

	rep.Link.Restore()
	waitFor(t, 30*time.Second, "every message dead-lettered and acked once the replica confirms", func() bool {
		return f.counter(f.metrics.Rejected, "orders", ReasonBadDelay) >= n && r.depth(t, r.Queue) == 0
	})
	for name, c := range map[string]*redis.Client{"master": rdb, "replica": replica} {
		var total int64
		for s := range f.topic.SlotCount() {
			k, err := c.ZCard(context.Background(), f.topic.Keys(s).Dead).Result()
			if err != nil {
				t.Fatal(err)
			}
			total += k
		}
		if total != n {
			t.Errorf("the %s's dead set holds %d messages, want %d", name, total, n)
		}
	}
}
