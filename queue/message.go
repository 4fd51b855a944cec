package queue

import "fmt"

// Message is a claimed member decoded according to its topic's format.
type Message struct {
	// ID is the delivered message id: MessageID(member) for raw members, the
	// envelope's id for envelopes.
	ID string
	// Body is what the broker receives.
	Body []byte
	// Headers and RoutingKey come from an envelope (empty for raw members).
	Headers    map[string]string
	RoutingKey string
}

// Decode turns a member of t into the message to deliver. A member that does
// not decode (an envelope topic holding something else) is an error: the
// forwarder dead-letters it with the reason.
func (t Topic) Decode(member string) (Message, error) {
	switch t.Format {
	case "", FormatRaw:
		return Message{ID: MessageID([]byte(member)), Body: []byte(member)}, nil
	default:
		return Message{}, fmt.Errorf("decode member of topic %s: format %q is not supported", t.Name, t.Format)
	}
}
