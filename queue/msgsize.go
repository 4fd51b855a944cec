package queue

import (
	"errors"
	"fmt"
)

// DefaultMaxMessageSize is the message size limit the daemon's
// configuration applies when none is set: 1 MiB, what every sink accepts
// by default (Kafka's message.max.bytes is about 1 MB; RabbitMQ and Redis
// streams take more).
const DefaultMaxMessageSize = 1 << 20

// ErrTooLarge: a message's body is over its topic's MaxMessageSize; nothing
// was written. The error is a *TooLargeError, which says both sizes.
var ErrTooLarge = errors.New("message is over the topic's size limit")

// TooLargeError is the error a schedule returns for a body over its topic's
// MaxMessageSize; errors.Is(err, ErrTooLarge) holds.
type TooLargeError struct {
	Topic string
	Size  int // the body's bytes
	Limit int // the topic's MaxMessageSize
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("topic %s: the body is %d bytes, over the topic's message size limit of %d bytes", e.Topic, e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) hold.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// checkSize refuses a body over t.MaxMessageSize (0: no limit). It runs
// when a message is accepted (Schedule, ScheduleMember, ScheduleBatch,
// ScheduleEach, SetRecurrence), never on what is stored already: a limit
// lowered later does not strand a message that was taken in.
func (t Topic) checkSize(bodyLen int) error {
	if t.MaxMessageSize > 0 && bodyLen > t.MaxMessageSize {
		return &TooLargeError{Topic: t.Name, Size: bodyLen, Limit: t.MaxMessageSize}
	}
	return nil
}

// checkMemberSize is checkSize for a member as is: a raw member is its
// body; an envelope is decoded only when the member itself is over the
// limit (its body is never larger than the member).
func (t Topic) checkMemberSize(member []byte) error {
	if t.MaxMessageSize <= 0 || len(member) <= t.MaxMessageSize {
		return nil
	}
	if !t.envelope() {
		return t.checkSize(len(member))
	}
	m, err := DecodeEnvelope(member)
	if err != nil {
		return nil // not an envelope: Locate reports it
	}
	return t.checkSize(len(m.Body))
}
