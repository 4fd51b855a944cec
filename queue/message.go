package queue

import (
	"fmt"
	"strconv"
	"strings"
)

// Message is a message as producers schedule it and the forwarder delivers
// it: a claimed member decoded according to its topic's format.
type Message struct {
	// ID is the delivered message id: MessageID(member) for raw members, the
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
	// (envelopes only; "" for none): a fair topic (Topic.Fair) gives each
	// key with due messages its turn. It is delivered as the header
	// x-delaybridge-key. See CheckKey.
	Key string
}

// Decode turns a member of t into the message to deliver. A member that does
// not decode (an envelope topic holding something else) is an error wrapping
// ErrInvalidEnvelope: the forwarder dead-letters it with the reason, so it
// never blocks its slot. A member that starts like a recurrence's tick
// (IsTick) decodes to the recurrence's message on either format: what the
// console and the CLI show; what is delivered is DecodeClaimed's.
func (t Topic) Decode(member string) (Message, error) {
	if IsTick(member) {
		m, err := decodeTick(member)
		if err != nil {
			return Message{}, fmt.Errorf("decode member of topic %s: %w", t.Name, err)
		}
		return m, nil
	}
	return t.decodePlain(member)
}

// decodePlain is Decode of a member that is not a tick.
func (t Topic) decodePlain(member string) (Message, error) {
	switch t.Format {
	case "", FormatRaw:
		return Message{ID: MessageID([]byte(member)), Body: []byte(member)}, nil
	case FormatEnvelope:
		m, err := decodeEnvelope([]byte(member), true) // a copy of its own
		if err != nil {
			return Message{}, fmt.Errorf("decode member of topic %s: %w", t.Name, err)
		}
		return m, nil
	default:
		return Message{}, fmt.Errorf("decode member of topic %s: format %q is not supported", t.Name, t.Format)
	}
}

// Encode turns a message into the member that carries it on t. A raw topic
// carries only the body, so a message with an id, headers or a routing key is
// an error there. An envelope's id must not have the form of a recurrence
// tick's id, nor the form reserved for intakes (checkOwnID).
func (t Topic) Encode(m Message) ([]byte, error) { return t.encode(m, false) }

// EncodeIntake is Encode for an intake, whose generated ids (IntakeID) have
// the reserved form.
func (t Topic) EncodeIntake(m Message) ([]byte, error) { return t.encode(m, true) }

func (t Topic) encode(m Message, intake bool) ([]byte, error) {
	switch t.Format {
	case "", FormatRaw:
		if m.ID != "" || len(m.Headers) > 0 || m.RoutingKey != "" || m.EmptyKey || !m.Properties.IsZero() || m.Key != "" {
			return nil, fmt.Errorf("encode for topic %s: %w", t.Name, ErrNotEnvelope)
		}
		return m.Body, nil
	case FormatEnvelope:
		err := checkOwnID(m.ID, intake)
		var b []byte
		if err == nil {
			b, err = EncodeEnvelope(m)
		}
		if err != nil {
			return nil, fmt.Errorf("encode for topic %s: %w", t.Name, err)
		}
		return b, nil
	default:
		return nil, fmt.Errorf("encode for topic %s: format %q is not supported", t.Name, t.Format)
	}
}

// envelope reports whether t's members are envelopes.
func (t Topic) envelope() bool { return t.Format == FormatEnvelope }

// memberID returns the id the :ids index uses for member: the envelope's id,
// or "" for raw topics and members that are not valid envelopes.
func (t Topic) memberID(member string) string {
	if !t.envelope() {
		return ""
	}
	id, err := EnvelopeID([]byte(member))
	if err != nil {
		return ""
	}
	return id
}

// unmapID is the id Ack and Retry pass so the scripts can drop the member
// from the ids index. The scripts only drop an entry that names exactly this
// member, so a wrong id here can leave a stale entry (swept later) but never
// remove a right one; that allows a fast path for what EncodeEnvelope writes
// (the id first, without escapes), which matters on the ack path.
func (t Topic) unmapID(member string) string {
	if !t.envelope() {
		return ""
	}
	if id, ok := canonID(member); ok {
		return id
	}
	return t.memberID(member)
}

// canonID is the id of an envelope written as EncodeEnvelope writes it:
// it starts with {"id":"<id>" and the id holds no '"' or '\', so the id is
// its bytes and no JSON decoder is needed. ok is false for any other
// member.
func canonID(member string) (id string, ok bool) {
	const head = `{"id":"`
	if rest, ok := strings.CutPrefix(member, head); ok {
		if i := strings.IndexAny(rest, `"\`); i > 0 && rest[i] == '"' {
			return rest[:i], true
		}
	}
	return "", false
}

// indexRef is the id Ack passes for member (as unmapID) and, when member is
// canonical (it starts with {"id":"<id>" and the id holds no '"' or '\'),
// the index bucket of that id, else "": exactly the members idsLua's canon
// accepts, so the script need not hash the id again.
func (t Topic) indexRef(member string) (id, bucket string) {
	if !t.envelope() {
		return "", ""
	}
	if id, ok := canonID(member); ok {
		return id, strconv.Itoa(idBucket(id))
	}
	return t.memberID(member), ""
}

// idBucket is the index bucket of id, as bucket in idsLua computes it.
func idBucket(id string) int {
	h := 0
	for i := 0; i < len(id); i++ {
		h = (h*31 + int(id[i])) % 1000003
	}
	return h % idBuckets
}

// Locate returns the slot and id of a member of t: for raw members the slot
// comes from the bytes and the id is MessageID; for envelopes both come from
// the envelope's id (an invalid envelope is an error).
func (t Topic) Locate(member []byte) (slot int, id string, err error) {
	if !t.envelope() {
		return t.SlotOf(member), MessageID(member), nil
	}
	id, err = EnvelopeID(member)
	if err != nil {
		return 0, "", fmt.Errorf("topic %s: %w", t.Name, err)
	}
	return t.SlotOfID(id), id, nil
}

// SlotOfID returns the slot of an envelope id on t: CRC32-IEEE(id) & (slots-1).
func (t Topic) SlotOfID(id string) int { return Slot([]byte(id), t.slots()) }
