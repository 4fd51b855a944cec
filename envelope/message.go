package envelope

import "errors"

// Message is a message as producers schedule it and the forwarder delivers
// it: a claimed member decoded according to its topic's format.
type Message struct {
	// ID is the delivered message id: queue.MessageID(member) for raw members, the
	// envelope's id for envelopes.
	ID string
	// Body is what the broker receives.
	Body []byte
	// Headers and RoutingKey come from an envelope (empty for raw members).
	// Both hold bytes, not only text: a Kafka record's key and header
	// values go through unchanged.
	Headers    map[string]string
	RoutingKey string
	// EmptyKey says the message has its own key and that key is empty (a
	// Kafka record's empty key, which is not its null key); RoutingKey is
	// then "".
	EmptyKey bool
	// Properties are AMQP message properties (envelopes only; see
	// Properties).
	Properties Properties
	// Key names the tenant, customer or group the message belongs to
	// (envelopes only; "" for none): a fair topic (queue.Topic.Fair) gives each
	// key with due messages its turn. It is delivered as the header
	// x-delaybridge-key. See CheckKey.
	Key string
}

// Limits of an envelope.
const (
	// MaxIDLen is the longest id in bytes: an AMQP message-id is a short
	// string of at most 255 bytes.
	MaxIDLen = 255
	// MaxFieldLen bounds header names and the routing key (AMQP short strings).
	MaxFieldLen = 255
	// MaxKeyLen bounds a key written as routing_key_b64 (a Kafka record
	// key); an AMQP routing key is at most MaxFieldLen bytes.
	MaxKeyLen = 64 << 10
	// ReservedHeaderPrefix starts the headers delaybridge sets itself.
	ReservedHeaderPrefix = "x-delaybridge-"
	// MaxFairKeyLen bounds a message's fair-share key (Message.Key).
	MaxFairKeyLen = 256
)

// ErrInvalid is wrapped by every error about a malformed envelope.
var ErrInvalid = errors.New("invalid envelope")
