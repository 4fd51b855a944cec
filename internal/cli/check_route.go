package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/sinks"
)

// routeNote is what `check` says of an AMQP topic on a named exchange: the
// exchange exists, but whether its bindings route the topic's routing key
// anywhere only a publish shows (a passive declare cannot tell).
func routeNote(t config.Topic) string {
	if t.Sink != "amqp" || t.Exchange == "" {
		return ""
	}
	return "exchange exists; routing is confirmed only by the broker at publish time (check --publish-test TOPIC sends a test message)"
}

// publishTest sends one test message to the topic's destination with key
// as its routing key, mandatory as every publish: nil when the broker
// routed it to a queue, an error saying it was not routed (312 NO_ROUTE)
// otherwise. The message is real: a consumer of that queue receives it,
// marked with the header x-delaybridge-test.
func publishTest(ctx context.Context, sink sinks.Sink, t config.Topic, key string) error {
	if t.Sink != "amqp" {
		return nil
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	msg := sinks.Message{
		ID: "delaybridge-check-" + hex.EncodeToString(b), Topic: t.Name,
		Body: []byte("delaybridge check --publish-test"), Due: time.Now(), Attempt: 1,
		Headers: map[string]string{"x-delaybridge-test": "true"}, RoutingKey: key,
	}
	err := sink.Publish(ctx, []sinks.Message{msg})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sinks.ErrNoDestination):
		return fmt.Errorf("test message to %s with routing key %q NOT routed: no queue is bound to it: %w", exchangeName(t.Exchange), key, err)
	}
	return fmt.Errorf("publish test message with routing key %q: %w", key, err)
}

// publishTestTopic refuses a --publish-test that does not name an AMQP
// topic of the configuration ("" is no test). It took a routing key once,
// applied to every topic: `--publish-test orders` read like a topic, and
// every topic whose bindings did not route "orders" failed.
func publishTestTopic(cfg config.Config, name string) error {
	if name == "" {
		return nil
	}
	var names []string
	for _, t := range cfg.Topics {
		if t.Name == name {
			if t.Sink != "amqp" {
				return fmt.Errorf("--publish-test %s: the topic's sink is %s; only AMQP topics take a test message", name, t.Sink)
			}
			return nil
		}
		names = append(names, t.Name)
	}
	return fmt.Errorf("--publish-test takes a topic of DELAYBRIDGE_TOPICS (%s), got %q", strings.Join(names, ", "), name)
}

// publishedTo says where a test message that the broker routed went: the
// queue the routing key names on the default exchange, a queue bound to
// the key on a named one; either way a consumer of that queue receives it.
func publishedTo(t config.Topic) string {
	if t.Exchange == "" {
		return fmt.Sprintf("test message published to the default exchange with routing key %q: it is in queue %q, "+
			"where a consumer will receive it (header x-delaybridge-test: true)", t.RoutingKey, t.RoutingKey)
	}
	return fmt.Sprintf("test message published to exchange %q with routing key %q and routed to the queue(s) bound to that key, "+
		"where a consumer will receive it (header x-delaybridge-test: true)", t.Exchange, t.RoutingKey)
}

// exchangeName names an exchange in a message ("" is the default one).
func exchangeName(e string) string {
	if e == "" {
		return "the default exchange"
	}
	return fmt.Sprintf("exchange %q", e)
}
