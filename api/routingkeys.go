package api

import (
	"fmt"
	"net/http"
	"path"
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
			"topic %s takes no routing_key: its messages go with the topic's own; the operator allows keys with DELAYBRIDGE_TOPIC_<NAME>_ROUTING_KEYS (patterns such as orders.*)", t.Name))
	}
	for _, p := range pats {
		if routingKeyMatches(p, key) {
			return nil
		}
	}
	return refuse(http.StatusForbidden, "routing_key_forbidden", fmt.Sprintf(
		"routing_key %s is not allowed in topic %s: it must match one of %s", jsonQuote(key), t.Name, strings.Join(pats, ",")))
}

// routingKeyMatches is path.Match, except that "*" alone matches every key
// (path.Match's "*" stops at '/'): the way to keep the behaviour of
// before ROUTING_KEYS. A malformed pattern (refused at configuration) matches
// nothing.
func routingKeyMatches(pattern, key string) bool {
	if pattern == "*" {
		return true
	}
	ok, err := path.Match(pattern, key)
	return ok && err == nil
}
