package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/delaybridge/delaybridge/queue"
)

// routingKeyAllowed refuses a message's own routing key unless the topic's
// patterns (Options.RoutingKeys) allow it. On an AMQP topic the key picks
// the queue, on the default exchange any queue: a token for one topic would
// otherwise deliver into another's. A Kafka key only picks a partition of
// the topic's Kafka topic and a Redis sink writes it as a field of the
// topic's stream, so those take any key unless patterns are set. A topic
// whose sink is unknown is treated as AMQP.
func (s *Server) routingKeyAllowed(t queue.Topic, l queue.Layout, key string) *apiError {
	if key == "" {
		return nil
	}
	var pats []string
	if s.opts.RoutingKeys != nil {
		pats = s.opts.RoutingKeys(t.Name)
	}
	if len(pats) == 0 {
		if l.Sink == "kafka" || l.Sink == "redis" {
			return nil
		}
		return refuse(http.StatusForbidden, "routing_key_forbidden", fmt.Sprintf(
			"topic %s takes no routing_key: its messages go with the topic's own; the operator allows keys with DELAYBRIDGE_TOPIC_<NAME>_ROUTING_KEYS (AMQP topic patterns such as orders.*, orders.#)", t.Name))
	}
	for _, p := range pats {
		if routingKeyMatches(p, key) {
			return nil
		}
	}
	return refuse(http.StatusForbidden, "routing_key_forbidden", fmt.Sprintf(
		"routing_key %s is not allowed in topic %s: it must match one of %s", jsonQuote(key), t.Name, strings.Join(pats, ",")))
}

// routingKeyMatches matches key against pattern as a RabbitMQ topic
// exchange matches a routing key against a binding key, the words an
// operator of an AMQP topic thinks in: both split at '.', "*" matches
// exactly one word, "#" zero or more words, any other word only itself
// ("orders.*" takes "orders.eu", not "orders.eu.admin"; "#" takes every
// key). The patterns were checked at configuration (a word holding '*' or
// '#' beside other characters is refused there).
func routingKeyMatches(pattern, key string) bool {
	return topicMatch(strings.Split(pattern, "."), strings.Split(key, "."))
}

func topicMatch(pat, words []string) bool {
	for len(pat) > 0 {
		switch pat[0] {
		case "#":
			for len(pat) > 1 && pat[1] == "#" { // "#.#" is "#"
				pat = pat[1:]
			}
			if len(pat) == 1 {
				return true
			}
			for i := range len(words) + 1 {
				if topicMatch(pat[1:], words[i:]) {
					return true
				}
			}
			return false
		case "*":
			if len(words) == 0 {
				return false
			}
		default:
			if len(words) == 0 || words[0] != pat[0] {
				return false
			}
		}
		pat, words = pat[1:], words[1:]
	}
	return len(words) == 0
}
