package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// TestCheckOfTheDefaultExchangeChecksTheRoutingKeysQueue: with the default
// exchange the destination is the queue the routing key names; deleted, the
// quick start's `check` said ok and the next message died 312 NO_ROUTE.
func TestCheckOfTheDefaultExchangeChecksTheRoutingKeysQueue(t *testing.T) {
	queueName := uniqueName("dbtest.checkq.")
	amqpTopicEnv(t, "")
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEY", queueName)
	e := &cliEnv{t: t, ctx: context.Background()}
	code, out, errs := e.run("", "check")
	if code != exitFail || !strings.Contains(out, "topic orders (amqp): FAILED") || !strings.Contains(out, `queue "`+queueName+`"`) {
		t.Fatalf("check without the routing key's queue: exit %d, want %d naming queue %s\nstdout: %s\nstderr: %s", code, exitFail, queueName, out, errs)
	}
	conn, err := amqp091.Dial(amqpURL())
	if err != nil {
		t.Fatalf("RabbitMQ: %v", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queueName, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = ch.QueueDelete(queueName, false, false, false) }()
	if code, out, errs := e.run("", "check"); code != exitOK || !strings.Contains(out, "topic orders (amqp): ok\n") {
		t.Fatalf("check with the queue declared: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

// TestCheckSaysANamedExchangeRoutesOnlyAtPublishAndPublishTestTells: a
// named exchange's bindings cannot be checked passively, so check says so;
// --publish-test TOPIC sends a message with the topic's exchange and
// routing key, mandatory, and says where it went (exit 1 when not routed);
// it takes a topic, not a routing key.
func TestCheckSaysANamedExchangeRoutesOnlyAtPublishAndPublishTestTells(t *testing.T) {
	exchange := uniqueName("dbtest.route.")
	amqpTopicEnv(t, exchange)
	ch, bound := declareBound(t, exchange)
	e := &cliEnv{t: t, ctx: context.Background()}
	code, out, errs := e.run("", "check")
	if code != exitOK || !strings.Contains(out, "routing is confirmed only by the broker at publish time") {
		t.Fatalf("check of a named exchange: exit %d, want 0 saying routing is confirmed at publish time\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, out, errs = e.run("", "check", "--publish-test", "orders")
	if code != exitOK || !strings.Contains(out, `test message published to exchange "`+exchange+`" with routing key "k"`) ||
		!strings.Contains(out, "a consumer will receive it") {
		t.Fatalf("publish test of orders (bound key k): exit %d, want 0 saying where it went\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if code, out, errs := e.run("", "check", "--publish-test", "k"); code != exitConfig || !strings.Contains(errs, "takes a topic of DELAYBRIDGE_TOPICS (orders)") {
		t.Fatalf("publish test of a routing key: exit %d, want %d saying it takes a topic\nstdout: %s\nstderr: %s", code, exitConfig, out, errs)
	}
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEY", "nowhere")
	code, out, errs = e.run("", "check", "--publish-test", "orders")
	if code != exitFail || !strings.Contains(out, `routing key "nowhere" NOT routed`) {
		t.Fatalf("publish test of an unbound key: exit %d, want %d saying not routed\nstdout: %s\nstderr: %s", code, exitFail, out, errs)
	}
	m, ok, err := ch.Get(bound, true)
	if err != nil || !ok || m.Headers["x-delaybridge-test"] != "true" {
		t.Errorf("the bound queue holds %+v (ok %v, %v), want the test message", m.Headers, ok, err)
	}
}

// TestCheckWarnsOfAMisspeltVariableAndExitsZero: only `run` logged a
// variable nothing reads; `check` said "configuration: ok" of
// DELAYBRIDGE_TOPIC_ORDRES_SLOTS. It is a warning (exit 0), in the text and
// the JSON; and one topic is "1 topic".
func TestCheckWarnsOfAMisspeltVariableAndExitsZero(t *testing.T) {
	exchange := uniqueName("dbtest.unused.")
	amqpTopicEnv(t, exchange)
	declareBound(t, exchange)
	t.Setenv("DELAYBRIDGE_TOPIC_ORDRES_SLOTS", "8")
	e := &cliEnv{t: t, ctx: context.Background()}
	code, out, errs := e.run("", "check")
	if code != exitOK || !strings.Contains(out, "configuration: ok (1 topic)\nwarning: DELAYBRIDGE_TOPIC_ORDRES_SLOTS is not used by this configuration: did you mean DELAYBRIDGE_TOPIC_ORDERS_SLOTS?") {
		t.Fatalf("check with a misspelt variable: exit %d, want 0 with a warning naming it\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, out, errs = e.run("", "check", "--json")
	if code != exitOK || !strings.Contains(out, `"warnings":["DELAYBRIDGE_TOPIC_ORDRES_SLOTS is not used`) {
		t.Fatalf("check --json with a misspelt variable: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

// TestReadyzOfTheDefaultExchangeNeedsTheRoutingKeysQueue: /readyz answered
// 200 with the quick start's queue deleted, and the next message died 312
// NO_ROUTE. It is 503 naming the queue until the queue exists.
func TestReadyzOfTheDefaultExchangeNeedsTheRoutingKeysQueue(t *testing.T) {
	queueName := uniqueName("dbtest.readyzq.")
	amqpTopicEnv(t, "")
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEY", queueName)
	d := startDaemon(t)
	d.waitReadyz(20*time.Second, "503 naming the queue", func(code int, body string) bool {
		return code == http.StatusServiceUnavailable && strings.Contains(body, queueName)
	})
	conn, err := amqp091.Dial(amqpURL())
	if err != nil {
		t.Fatalf("RabbitMQ: %v", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queueName, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = ch.QueueDelete(queueName, false, false, false) }()
	d.waitReadyz(20*time.Second, "200", func(code int, _ string) bool { return code == http.StatusOK })
	if code := d.stop(30 * time.Second); code != exitOK {
		t.Errorf("daemon exit %d", code)
	}
}
