package cli

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

// TestDaemonTakesInXDelayMessagesFromRabbitMQ runs the daemon in process
// with an AMQP intake: a message published with x-delay 1000 to the intake
// queue arrives at the topic's exchange a second later, as sent.
func TestDaemonTakesInXDelayMessagesFromRabbitMQ(t *testing.T) {
	_, prefix := redistest.New(t)
	conn, err := amqp091.Dial(e2etest.AMQPURL())
	if err != nil {
		t.Fatalf("RabbitMQ is required: %v", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	u := redistest.Suffix()
	in, dest, destQ := "intake-"+u, "dest-"+u, "dest-q-"+u
	for _, q := range []string{in, destQ} {
		if _, err := ch.QueueDeclare(q, false, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		defer ch.QueueDelete(q, false, false, false) //nolint:errcheck
	}
	if err := ch.ExchangeDeclare(dest, "topic", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	defer ch.ExchangeDelete(dest, false, false) //nolint:errcheck
	if err := ch.QueueBind(destQ, "#", dest, false, nil); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"REDIS_URL": redistest.URL(), "AMQP_URL": e2etest.AMQPURL(), "KEY_PREFIX": prefix, "HTTP_ADDR": "127.0.0.1:0",
		"OWNERSHIP": "all", "POLL_INTERVAL": "100ms", "TOPICS": "orders",
		"TOPIC_ORDERS_FORMAT": "envelope", "TOPIC_ORDERS_EXCHANGE": dest,
		"TOPIC_ORDERS_INTAKE": "amqp", "TOPIC_ORDERS_INTAKE_QUEUE": in,
	} {
		t.Setenv("DELAYBRIDGE_"+k, v)
	}
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, Build{}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()

	sent := time.Now()
	err = ch.PublishWithContext(ctx, "", in, false, false, amqp091.Publishing{
		MessageId: "m1", ContentType: "text/plain", Headers: amqp091.Table{"x-delay": int32(1000), "x-tenant": "acme"}, Body: []byte("hello"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var d amqp091.Delivery
	e2etest.WaitFor(t, 20*time.Second, "the message at the destination", func() bool {
		var ok bool
		d, ok, _ = ch.Get(destQ, true)
		return ok
	})
	if since := time.Since(sent); since < time.Second {
		t.Errorf("arrived after %v, before its 1s delay", since)
	}
	if string(d.Body) != "hello" || d.MessageId != "m1" || d.ContentType != "text/plain" || d.Headers["x-tenant"] != "acme" || d.RoutingKey != in {
		t.Errorf("delivered %q id %q type %q headers %v key %q", d.Body, d.MessageId, d.ContentType, d.Headers, d.RoutingKey)
	}
}

// TestReadyzReportsTheIntakeUntilItConsumes: /readyz is 503 naming the
// topic and the queue while the intake's queue is missing, 200 once it
// exists and the intake consumes, and 503 again when the queue is deleted.
func TestReadyzReportsTheIntakeUntilItConsumes(t *testing.T) {
	exchange := uniqueName("dbtest.intake-readyz.")
	amqpTopicEnv(t, exchange)
	ch, _ := declareBound(t, exchange)
	in := exchange + ".in"
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_FORMAT", "envelope")
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_INTAKE", "amqp")
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_INTAKE_QUEUE", in)
	d := startDaemon(t)
	d.waitReadyz(20*time.Second, "503 naming the intake's queue", func(code int, body string) bool {
		return code == http.StatusServiceUnavailable && strings.Contains(body, "topic orders") &&
			strings.Contains(body, "intake of queue "+in) && strings.Contains(body, "NOT_FOUND")
	})
	if _, err := ch.QueueDeclare(in, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	defer ch.QueueDelete(in, false, false, false) //nolint:errcheck
	d.waitReadyz(30*time.Second, "200 once the queue exists", func(code int, _ string) bool { return code == http.StatusOK })
	if _, err := ch.QueueDelete(in, false, false, false); err != nil {
		t.Fatal(err)
	}
	d.waitReadyz(20*time.Second, "503 once the queue is gone", func(code int, body string) bool {
		return code == http.StatusServiceUnavailable && strings.Contains(body, "intake of queue "+in)
	})
}
