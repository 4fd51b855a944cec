package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRoutingKeysAreReadForEveryTopicSet: ROUTING_KEYS is parsed (spaces
// trimmed) for a listed topic and, since the API serves every registered
// topic, for one that `delaybridge api` knows only from Redis; it is not
// reported unused; a topic without it has no patterns.
func TestRoutingKeysAreReadForEveryTopicSet(t *testing.T) {
	setEnv(t, map[string]string{
		"TOPICS":                          "orders",
		"TOPIC_ORDERS_ROUTING_KEYS":       "orders.* , audit",
		"TOPIC_ORDER_EVENTS_ROUTING_KEYS": "*",
		"TOPIC_REMINDERS_ROUTING_KEYS":    " ",
	})
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	for topic, want := range map[string][]string{"orders": {"orders.*", "audit"}, "order-events": {"*"}, "reminders": nil, "other": nil} {
		if diff := cmp.Diff(want, c.API.RoutingKeysOf(topic)); diff != "" {
			t.Errorf("%s: patterns (-want +got):\n%s", topic, diff)
		}
	}
	env := []string{Prefix + "_TOPIC_ORDER_EVENTS_ROUTING_KEYS=*", Prefix + "_TOPIC_ORDERS_ROUTING_KEYS=audit"}
	if got := c.Unused(env); len(got) != 0 {
		t.Errorf("reported unused: %v", got)
	}
	if got := c.Redacted()[Prefix+"_TOPIC_ORDERS_ROUTING_KEYS"]; got != "orders.*,audit" {
		t.Errorf("Redacted shows TOPIC_ORDERS_ROUTING_KEYS=%q", got)
	}

	setEnv(t, map[string]string{"TOPIC_ORDERS_ROUTING_KEYS": "orders.*"})
	if c, err = LoadCLI(); err != nil {
		t.Fatalf("LoadCLI without topics: %v", err)
	}
	if diff := cmp.Diff([]string{"orders.*"}, c.API.RoutingKeysOf("orders")); diff != "" {
		t.Errorf("without DELAYBRIDGE_TOPICS: patterns (-want +got):\n%s", diff)
	}
}

// TestBadRoutingKeysPatternIsRefused: a malformed pattern or an empty item
// fails the load naming the variable (exit 2 in the commands), listed topic
// or not.
func TestBadRoutingKeysPatternIsRefused(t *testing.T) {
	for _, v := range []string{"orders.[", "orders.*,,audit", `audit,\`, "[a-", "orders.eu*", "a?c", "orders#"} {
		setEnv(t, map[string]string{"TOPICS": "orders", "TOPIC_ORDERS_ROUTING_KEYS": v, "TOPIC_LEGACY_ROUTING_KEYS": v})
		_, err := LoadCLI()
		if err == nil {
			t.Fatalf("%q accepted", v)
		}
		want := []string{Prefix + "_TOPIC_LEGACY_ROUTING_KEYS", Prefix + "_TOPIC_ORDERS_ROUTING_KEYS"}
		if diff := cmp.Diff(want, varsNamed(t, err)); diff != "" {
			t.Errorf("%q: variables named (-want +got):\n%s", v, diff)
		}
	}
}
