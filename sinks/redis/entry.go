package redis

import (
	"maps"
	"slices"

	goredis "github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/sinks"
)

// Field names of a stream entry. Every entry has FieldID, FieldTopic,
// FieldDue, FieldAttempt and FieldBody, in that order; then FieldRoutingKey
// when the message has a routing key of its own; then FieldKey when it has a
// fair-share key; then one field per
// envelope header, named HeaderPrefix + the header's name, in name order.
// The prefix keeps a header from shadowing a field of delaybridge's.
const (
	FieldID         = "id"          // the stable message id
	FieldTopic      = "topic"       // the delaybridge topic
	FieldDue        = "due"         // due time, Unix ms, in decimal
	FieldAttempt    = "attempt"     // 1-based attempt number, in decimal
	FieldBody       = "body"        // the payload, byte for byte
	FieldRoutingKey = "routing_key" // the envelope's routing_key, only when set
	FieldKey        = "key"         // the message's fair-share key, only when set
	HeaderPrefix    = "h:"          // prefix of an envelope header's field
)

// xadd is the XADD of m to the sink's stream: a new entry with an id Redis
// chooses, trimmed as configured.
func (s *Sink) xadd(m *sinks.Message) *goredis.XAddArgs {
	body := m.Body
	if body == nil {
		body = []byte{}
	}
	values := make([]any, 0, 2*(6+len(m.Headers)))
	values = append(values,
		FieldID, m.ID,
		FieldTopic, m.Topic,
		FieldDue, m.DueMillis(),
		FieldAttempt, m.Attempt,
		FieldBody, body,
	)
	if m.RoutingKey != "" {
		values = append(values, FieldRoutingKey, m.RoutingKey)
	}
	if m.Key != "" {
		values = append(values, FieldKey, m.Key)
	}
	for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
		values = append(values, HeaderPrefix+k, m.Headers[k])
	}
	return &goredis.XAddArgs{
		Stream: s.cfg.Stream,
		MaxLen: s.cfg.MaxLen,
		Approx: s.cfg.MaxLen > 0,
		Values: values,
	}
}
