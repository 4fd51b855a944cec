package envelope

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Properties are the AMQP message properties an envelope may carry, so a
// message taken in from RabbitMQ (see package intake) is published again as
// it was sent. The zero value is "none": the envelope then has no
// properties field, and is byte for byte what it was before the field
// existed. The message id is not among them: it is the envelope's id.
//
// Only the AMQP sink delivers them; the Kafka and Redis stream sinks ignore
// them.
type Properties struct {
	ContentType     string `json:"content_type,omitempty"`
	ContentEncoding string `json:"content_encoding,omitempty"`
	CorrelationID   string `json:"correlation_id,omitempty"`
	ReplyTo         string `json:"reply_to,omitempty"`
	// Expiration is the per-message TTL in ms, as text (AMQP's format). It
	// counts from the publish at the due time, as with the delayed-message
	// plugin.
	Expiration string `json:"expiration,omitempty"`
	// Timestamp is the AMQP timestamp, Unix seconds; 0 means none.
	Timestamp int64  `json:"timestamp,omitempty"`
	Type      string `json:"type,omitempty"`
	AppID     string `json:"app_id,omitempty"`
	// Priority is 0 to 255; 0 means none (RabbitMQ treats both alike).
	Priority uint8 `json:"priority,omitempty"`
}

// IsZero reports whether p sets nothing.
func (p Properties) IsZero() bool { return p == Properties{} }

// check validates the text fields: AMQP short strings, valid UTF-8.
func (p Properties) check() error {
	for name, v := range map[string]string{
		"content_type": p.ContentType, "content_encoding": p.ContentEncoding,
		"correlation_id": p.CorrelationID, "reply_to": p.ReplyTo, "expiration": p.Expiration,
		"type": p.Type, "app_id": p.AppID,
	} {
		if len(v) > MaxFieldLen || !utf8.ValidString(v) {
			return invalid("properties.%s must be valid UTF-8 of at most %d bytes", name, MaxFieldLen)
		}
	}
	if p.Timestamp < 0 {
		return invalid("properties.timestamp %d is negative", p.Timestamp)
	}
	return nil
}

// decodeProperties reads the properties object strictly: an unknown field
// is an error, as it is at the top level of the envelope.
func decodeProperties(dec *json.Decoder) (Properties, error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return Properties{}, err
	}
	var p Properties
	if string(raw) == "null" {
		return p, nil
	}
	pd := json.NewDecoder(bytes.NewReader(raw))
	pd.DisallowUnknownFields()
	if err := pd.Decode(&p); err != nil {
		return Properties{}, invalid("properties: %v", err)
	}
	return p, p.check()
}
