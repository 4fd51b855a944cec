package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/delaybridge/delaybridge/queue"
)

// TestRoutingKeyOutsideTheTopicsPatternsIsForbidden: a token scoped to
// orders (patterns eu.*, r) cannot send a routing key that would deliver
// elsewhere: 403 routing_key_forbidden naming the topic and the patterns,
// and nothing is scheduled; a key the patterns allow is scheduled (201),
// in a batch too, where only the forbidden item is refused.
func TestRoutingKeyOutsideTheTopicsPatternsIsForbidden(t *testing.T) {
	f := newFixture(t)
	for _, key := range []string{"other-topics-queue", "eu", "us.orders", "eu.orders.admin", "amq.gen-queue"} {
		r := f.do("POST", "/v1/topics/orders/messages", ordersOnlyToken, `{"id":"forged","body":"x","routing_key":"`+key+`"}`)
		f.want(r, http.StatusForbidden, "routing_key_forbidden")
		if msg := r.json["error"].(string); !strings.Contains(msg, "topic orders") || !strings.Contains(msg, "eu.*,r") {
			t.Errorf("key %q: the error names neither the topic nor the patterns: %s", key, msg)
		}
	}
	if _, ok := f.scoreOf(f.orders, "forged"); ok {
		t.Fatal("a message with a forbidden routing key was scheduled")
	}
	f.want(f.do("POST", "/v1/topics/orders/messages", ordersOnlyToken, `{"id":"kept","body":"x","routing_key":"eu.orders"}`), http.StatusCreated, "")
	if m := f.memberOf(f.orders, "kept"); !strings.Contains(m, "eu.orders") {
		t.Fatalf("member %s does not hold its routing key", m)
	}

	r := f.do("POST", "/v1/topics/orders/messages:batch", fullToken,
		`{"messages":[{"id":"b1","body":"x","routing_key":"eu.b"},{"id":"b2","body":"x","routing_key":"us.b"},{"id":"b3","body":"x"}]}`)
	f.want(r, http.StatusOK, "")
	results := r.json["results"].([]any)
	for i, want := range []float64{201, 403, 201} {
		if got := results[i].(map[string]any)["status"]; got != want {
			t.Errorf("batch item %d: status %v, want %v (%s)", i, got, want, r.raw)
		}
	}
	if _, ok := f.scoreOf(f.orders, "b2"); ok {
		t.Error("the batch's forbidden item was scheduled")
	}
}

// TestRoutingKeyDefaultsBySink: without patterns, an AMQP topic (its key
// picks the queue) refuses every routing key, while a Kafka topic (the key
// picks a partition of the topic's own Kafka topic) takes any; a message
// without a key is scheduled either way.
func TestRoutingKeyDefaultsBySink(t *testing.T) {
	f := newFixture(t)
	plain := queue.Layout{Version: queue.LayoutVersion, Name: "plain", Slots: 1, Format: queue.FormatEnvelope, Sink: "amqp"}
	if _, err := f.q.Register(context.Background(), f.prefix, "test-replica", []queue.Layout{plain}); err != nil {
		t.Fatal(err)
	}
	r := f.do("POST", "/v1/topics/plain/messages", fullToken, `{"id":"a","body":"x","routing_key":"orders"}`)
	f.want(r, http.StatusForbidden, "routing_key_forbidden")
	if msg := r.json["error"].(string); !strings.Contains(msg, "ROUTING_KEYS") {
		t.Errorf("the refusal does not say how to allow keys: %s", msg)
	}
	f.want(f.do("POST", "/v1/topics/plain/messages", fullToken, `{"id":"b","body":"x"}`), http.StatusCreated, "")
	f.want(f.do("POST", "/v1/topics/small/messages", fullToken, `{"id":"c","body":"x","routing_key":"any/key"}`), http.StatusCreated, "")
}

// TestRoutingKeysMatchAsAnAMQPTopicExchangeDoes: "*" is exactly one
// dot-separated word, "#" zero or more, so "orders.*" does not take
// "orders.eu.admin" (path.Match's "*" did).
func TestRoutingKeysMatchAsAnAMQPTopicExchangeDoes(t *testing.T) {
	for _, c := range []struct {
		pattern, key string
		want         bool
	}{
		{"#", "a.b", true}, {"#", "a/b", true}, {"#", "", true}, {"#.#", "a.b.c", true},
		{"*", "a", true}, {"*", "a.b", false}, {"*", "a/b", true},
		{"orders.*", "orders.eu", true}, {"orders.*", "orders.eu.admin", false}, {"orders.*", "orders", false},
		{"orders.*", "orders/eu", false}, {"orders.*", "audit", false},
		{"orders.#", "orders", true}, {"orders.#", "orders.eu.admin", true}, {"orders.#", "ordersx", false},
		{"*.eu.#", "orders.eu", true}, {"*.eu.#", "orders.eu.a.b", true}, {"*.eu.#", "eu.a", false},
		{"#.admin", "orders.eu.admin", true}, {"#.admin", "admin", true}, {"#.admin", "orders.admins", false},
		{"audit", "audit", true}, {"a?c", "abc", false}, {"a.*.c", "a..c", true},
	} {
		if got := routingKeyMatches(c.pattern, c.key); got != c.want {
			t.Errorf("routingKeyMatches(%q, %q) = %v, want %v", c.pattern, c.key, got, c.want)
		}
	}
}
