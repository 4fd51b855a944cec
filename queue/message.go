package queue

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/delaybridge/delaybridge/envelope"
)

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
		m, err := envelope.DecodeOwned([]byte(member)) // a copy of its own
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
