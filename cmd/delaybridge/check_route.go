package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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
	return "exchange exists; routing is confirmed only by the broker at publish time (check --publish-test ROUTING_KEY sends a test message)"
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
		return fmt.Errorf("test message with routing key %q NOT routed: no queue is bound to it: %w", key, err)
	}
	return fmt.Errorf("publish test message with routing key %q: %w", key, err)
}
