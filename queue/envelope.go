package queue

import (
	"fmt"

	"github.com/delaybridge/delaybridge/envelope"
)

// The envelope codec lives in package envelope (no Redis); these names keep
// the queue's Go API whole, so a producer needs one import.

// Message is a message as producers schedule it and the forwarder delivers
// it (envelope.Message).
type Message = envelope.Message

// Properties are AMQP message properties (envelope.Properties).
type Properties = envelope.Properties

// Limits of an envelope (see package envelope).
const (
	MaxIDLen             = envelope.MaxIDLen
	MaxFieldLen          = envelope.MaxFieldLen
	MaxKeyLen            = envelope.MaxKeyLen
	ReservedHeaderPrefix = envelope.ReservedHeaderPrefix
	MaxFairKeyLen        = envelope.MaxFairKeyLen
	MaxHeaderBytes       = envelope.MaxHeaderBytes
)

// ErrInvalidEnvelope is wrapped by every error about a malformed envelope
// (envelope.ErrInvalid).
var ErrInvalidEnvelope = envelope.ErrInvalid

// EncodeEnvelope is envelope.Encode.
func EncodeEnvelope(m Message) ([]byte, error) { return envelope.Encode(m) }

// DecodeEnvelope is envelope.Decode.
func DecodeEnvelope(member []byte) (Message, error) { return envelope.Decode(member) }

// EnvelopeID is envelope.ID.
func EnvelopeID(member []byte) (string, error) { return envelope.ID(member) }

// CheckID is envelope.CheckID.
func CheckID(id string) error { return envelope.CheckID(id) }

// CheckKey is envelope.CheckKey.
func CheckKey(key string) error { return envelope.CheckKey(key) }

// HeaderBytes is envelope.HeaderBytes.
func HeaderBytes(headers map[string]string, p Properties) int {
	return envelope.HeaderBytes(headers, p)
}

// invalid is an error about a malformed member, wrapping ErrInvalidEnvelope.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidEnvelope, fmt.Sprintf(format, args...))
}
