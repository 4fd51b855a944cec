package e2e

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestEnvelopeRoundTripKeepsIDHeadersAndRoutingKey schedules envelopes with
// the Go producer API and reads them from both sinks.
func TestEnvelopeRoundTripKeepsIDHeadersAndRoutingKey(t *testing.T) {
	t.Parallel()
	name := e2etest.Unique(t)
	rdb := e2etest.ConnectRedis(t, name)
	q := queue.New(rdb)
	kafkaAddr := startDevkafka(t, "events", 1)
	group := e2etest.ConsumeKafkaGroup(t, []string{kafkaAddr}, "events", name)

	// AMQP: the per-message routing key chooses the queue.
	conn, err := amqp.Dial(e2etest.AMQPURL())
	if err != nil {
		t.Fatalf("rabbitmq at %s is required: %v", e2etest.AMQPURL(), err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare(name, "direct", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	qd, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(qd.Name, "eu.orders", name, false, nil); err != nil {
		t.Fatal(err)
	}
	msgs, err := ch.Consume(qd.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.ExchangeDelete(name, false, false) })

	d := startDaemon(t, map[string]string{
		"DELAYBRIDGE_KEY_PREFIX":               name,
		"DELAYBRIDGE_TOPICS":                   "orders,events",
		"DELAYBRIDGE_TOPIC_ORDERS_FORMAT":      "envelope",
		"DELAYBRIDGE_TOPIC_ORDERS_SLOTS":       "4",
		"DELAYBRIDGE_TOPIC_ORDERS_EXCHANGE":    name,
		"DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEY": "unbound",
		"DELAYBRIDGE_TOPIC_EVENTS_FORMAT":      "envelope",
		"DELAYBRIDGE_TOPIC_EVENTS_SINK":        "kafka",
		"DELAYBRIDGE_TOPIC_EVENTS_KAFKA_KEY":   "envelope",
		"DELAYBRIDGE_KAFKA_BROKERS":            kafkaAddr,
	})
	ctx := context.Background()
	orders := queue.Topic{Name: "orders", Prefix: name, Slots: 4, Format: queue.FormatEnvelope}
	events := queue.Topic{Name: "events", Prefix: name, Slots: 1, Format: queue.FormatEnvelope}
	m := queue.Message{ID: "order-42", Body: []byte(`{"order":42}`), Headers: map[string]string{"tenant": "acme"}, RoutingKey: "eu.orders"}
	if _, err := q.Schedule(ctx, orders, m, queue.In(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	// Scheduling the same id again replaces it (idempotent producers).
	if _, err := q.Schedule(ctx, orders, m, queue.In(700*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	e := queue.Message{ID: "evt-7", Body: []byte("binary\x00\xffbody"), Headers: map[string]string{"kind": "reminder"}, RoutingKey: "user-7"}
	if _, err := q.Schedule(ctx, events, e, queue.In(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}

	select {
	case got := <-msgs:
		if got.MessageId != "order-42" || string(got.Body) != `{"order":42}` || got.RoutingKey != "eu.orders" {
			t.Errorf("amqp: id %q body %q routing key %q", got.MessageId, got.Body, got.RoutingKey)
		}
		if got.Headers["tenant"] != "acme" || got.Headers["x-delaybridge-topic"] != "orders" {
			t.Errorf("amqp headers %v", got.Headers)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no AMQP delivery")
	}
	select {
	case extra := <-msgs:
		t.Errorf("the replaced schedule of order-42 was delivered too: %q", extra.Body)
	case <-time.After(time.Second):
	}

	e2etest.WaitFor(t, 30*time.Second, "kafka record", func() bool { return group.Received() >= 1 })
	rec := group.Deliveries()[0]
	if string(rec.Body) != "binary\x00\xffbody" || rec.ID != "evt-7" || rec.Key != "user-7" || rec.Headers["kind"] != "reminder" {
		t.Errorf("kafka: body %q id %q key %q headers %v", rec.Body, rec.ID, rec.Key, rec.Headers)
	}
	stop(t, d)
	expectEmpty(t, rdb, name)
}
