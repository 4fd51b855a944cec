package cluster

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// slowConsumer takes one message at a time from a queue, perSecond a
// second, acknowledging each, and records the numbers it got.
type slowConsumer struct {
	mu   sync.Mutex
	seen map[int]int
}

func consumeSlowly(t *testing.T, queueName string, perSecond int) *slowConsumer {
	t.Helper()
	conn, err := amqp.Dial(e2etest.AMQPURL())
	if err != nil {
		t.Fatalf("rabbitmq: %v", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Qos(10, 0, false); err != nil {
		t.Fatal(err)
	}
	msgs, err := ch.Consume(queueName, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &slowConsumer{seen: map[int]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second / time.Duration(perSecond))
		defer tick.Stop()
		for m := range msgs {
			<-tick.C
			c.mu.Lock()
			c.seen[e2etest.Number(m.Body)]++
			c.mu.Unlock()
			_ = m.Ack(false)
		}
	}()
	t.Cleanup(func() {
		_ = conn.Close()
		<-done
	})
	return c
}

func (c *slowConsumer) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

// readyCount is the queue's ready messages, by a passive declare.
func readyCount(conn *amqp.Connection, name string) (int, error) {
	ch, err := conn.Channel()
	if err != nil {
		return 0, err
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(name, false, false, false, false, nil)
	if err != nil {
		return 0, fmt.Errorf("read queue %s: %w", name, err)
	}
	return q.Messages, nil
}

// TestHoldAboveNeverFloodsASlowConsumersQueue: a consumer takes about 300
// messages a second; 8,000 fall due at once on a topic of 4 slots with
// BATCH_SIZE=100 and HOLD_ABOVE=1000 on the consumer's queue. The queue's
// ready count, sampled every 100 ms, never exceeds 1,000 + 4 × 100;
// everything arrives and nothing is dead-lettered.
func TestHoldAboveNeverFloodsASlowConsumersQueue(t *testing.T) {
	prefix := e2etest.Unique(t)
	b := standalone(t, prefix)
	mq := e2etest.NewTransientRabbit(t, prefix+"-work")
	const n, hold, batch, nslots = 8000, 1000, 100, 4
	vars := mq.TopicVars(prefix, "work", nslots)
	maps.Copy(vars, map[string]string{
		"DELAYBRIDGE_BATCH_SIZE":            fmt.Sprint(batch),
		"DELAYBRIDGE_TOPIC_WORK_HOLD_QUEUE": mq.Queue,
		"DELAYBRIDGE_TOPIC_WORK_HOLD_ABOVE": fmt.Sprint(hold),
	})
	d := startReplica(t, b, "replica-a", vars)
	c := consumeSlowly(t, mq.Queue, 300)
	tp := queue.Topic{Name: "work", Prefix: prefix, Slots: nslots}
	plan := e2etest.NewPlan(n, time.Now().Add(500*time.Millisecond), 0)
	plan.Schedule(t, b.rdb, tp, e2etest.RawMember, nil)

	conn, err := amqp.Dial(e2etest.AMQPURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	worst, samples := 0, 0
	deadline := time.Now().Add(120 * time.Second)
	for c.distinct() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d arrived within 120 s", c.distinct(), n)
		}
		r, err := readyCount(conn, mq.Queue)
		if err != nil {
			t.Fatal(err)
		}
		worst, samples = max(worst, r), samples+1
		time.Sleep(100 * time.Millisecond)
	}
	held, _, _ := e2etest.Metric(context.Background(), d.Addr(), "delaybridge_topic_held_seconds_total", "topic=work", "reason=queue")
	t.Logf("%d arrived; the queue's ready count peaked at %d over %d samples (limit %d + %d slots × %d); held %.1f scanner-seconds",
		c.distinct(), worst, samples, hold, nslots, batch, held)
	if worst > hold+nslots*batch {
		t.Errorf("the queue held %d ready messages, more than %d + %d × %d", worst, hold, nslots, batch)
	}
	if held <= 0 {
		t.Error("delaybridge_topic_held_seconds_total{reason=queue} stayed 0")
	}
	if dead := e2etest.DeadSet(t, b.rdb, tp); len(dead) > 0 {
		t.Errorf("%d messages dead-lettered, first %+v", len(dead), dead[0])
	}
	stopAll(t, []*replica{d})
}
