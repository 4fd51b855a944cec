package queue

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// An envelope is the member format of FormatEnvelope topics: one JSON object
//
//	{"id":"order-42","body":"text","headers":{"k":"v"},"routing_key":"orders.eu"}
//
// with these fields (any other field makes the member invalid, so a typo such
// as "routingKey" is reported instead of silently ignored):
//   - id (required): the message id delivered with every attempt; 1 to
//     MaxIDLen bytes of UTF-8 without control characters. The slot is
//     CRC32-IEEE(id) & (slots-1).
//   - body: a JSON string carries its UTF-8 text; any other JSON value
//     (object, array, number, boolean) is delivered as its JSON text, byte for
//     byte; null or absent is an empty body.
//   - body_b64: standard base64 (with padding) of a binary body, instead of
//     body (never both); EncodeEnvelope writes it for a body that is not
//     UTF-8 or that JSON's escapes would make longer than base64.
//   - headers: an object of string values, delivered as AMQP headers or Kafka
//     record headers. Names are 1 to MaxFieldLen bytes and may not start with
//     ReservedHeaderPrefix (delaybridge's own headers).
//   - headers_b64: headers whose values are bytes that are not UTF-8 (a
//     Kafka header value), each value in standard base64; same rules for
//     names, and no name in both objects.
//   - routing_key: the AMQP routing key, or Kafka record key, of this message
//     (up to MaxFieldLen bytes); empty means the topic's.
//   - routing_key_b64: the key in standard base64 instead (never both), for
//     a key that is not UTF-8, longer than MaxFieldLen (up to MaxKeyLen) or
//     present and empty (a Kafka record's empty key is not its null key):
//     "" is the empty key.
//   - key: the fair-share key of the message (see Message.Key): 1 to
//     MaxFairKeyLen bytes of UTF-8 without control characters; absent or
//     "" is no key. Written second, right after id, so the scripts of a
//     fair topic read it without decoding the member. A daemon older than
//     this field refuses envelopes that hold it (unknown field).
//   - properties: AMQP message properties (see Properties), written only
//     when some are set. A daemon older than this field refuses envelopes
//     that hold it (unknown field), so every replica must run a version
//     that knows it before anything writes it (the intake does).
//
// headers_b64 and routing_key_b64 are written only for what the fields
// before them cannot hold, so an envelope of text is the same member as
// before they existed. A daemon older than them refuses an envelope that
// holds one (unknown field) and dead-letters it with that reason: it never
// delivers the message without its key or headers, and the dead set's
// requeue delivers it once every replica knows the fields. Before them, the
// intake dead-lettered such records itself (a key or header that is not
// UTF-8) or dropped an empty key.
//
// The whole member must be valid UTF-8 and hold exactly one object, and no
// field may appear twice.

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

// ErrInvalidEnvelope is wrapped by every error about a malformed envelope.
var ErrInvalidEnvelope = errors.New("invalid envelope")

// envelope is a parsed envelope before its body is decoded.
type envelope struct {
	id         string
	body       json.RawMessage // as written; nil when absent
	bodyB64    *string
	b64Text    []byte // body_b64's text, a slice of the member, when it has no escape
	headers    map[string]string
	headersB64 map[string]string
	routingKey string
	keyB64     *string
	properties Properties
	key        string
}

// envelopeOut is the canonical encoding written by EncodeEnvelope.
type envelopeOut struct {
	ID         string            `json:"id"`
	Key        string            `json:"key,omitempty"`
	Body       *string           `json:"body,omitempty"`
	BodyB64    *string           `json:"body_b64,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	HeadersB64 map[string]string `json:"headers_b64,omitempty"`
	RoutingKey string            `json:"routing_key,omitempty"`
	KeyB64     *string           `json:"routing_key_b64,omitempty"`
	Properties *Properties       `json:"properties,omitempty"`
}

// EncodeEnvelope returns the member that carries m on an envelope topic. A
// body that is valid UTF-8 is written as a JSON string, any other as
// body_b64; so is a text body whose JSON escapes would make it longer than
// base64 does (control bytes are six bytes each as \u0001: a member, and
// each copy a script makes of it, would cost six times the body). The encoding is deterministic (header names sorted), so the same
// message always gives the same member.
func EncodeEnvelope(m Message) ([]byte, error) {
	if err := checkEnvelope(m.ID, m.Headers, m.RoutingKey); err != nil {
		return nil, err
	}
	if err := checkHeaderBytes(m.Headers, m.Properties); err != nil {
		return nil, err
	}
	if err := CheckKey(m.Key); err != nil {
		return nil, err
	}
	out := envelopeOut{ID: m.ID, Key: m.Key}
	out.Headers, out.HeadersB64 = splitHeaders(m.Headers)
	out.RoutingKey, out.KeyB64 = splitKey(m.RoutingKey, m.EmptyKey)
	// A body of plain text, or base64, is spliced into the member by
	// spliceBody below rather than copied into a string, then an encoder's
	// growing buffer, then this one.
	var field string
	var text []byte
	switch {
	case len(m.Body) > 0 && plainText(m.Body):
		field, text = "body", m.Body
	case utf8.Valid(m.Body) && escapedLen(m.Body) <= base64.StdEncoding.EncodedLen(len(m.Body)):
		s := string(m.Body)
		out.Body = &s
	default:
		field, text = "body_b64", make([]byte, base64.StdEncoding.EncodedLen(len(m.Body)))
		base64.StdEncoding.Encode(text, m.Body)
	}
	if !m.Properties.IsZero() {
		if err := m.Properties.check(); err != nil {
			return nil, err
		}
		p := m.Properties
		out.Properties = &p
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("encode envelope %q: %w", m.ID, err)
	}
	small := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if field != "" {
		return spliceBody(small, field, text), nil
	}
	return small, nil
}

// escapedLen is about how long b is as a JSON string's content, as
// EncodeEnvelope's encoder writes it: a control byte is six bytes
// (\u0001), but \n, \r, \t, \b and \f two, as are '"' and '\'. (U+2028
// and U+2029 are counted as they are: the decision only needs to be
// deterministic.)
func escapedLen(b []byte) int {
	n := len(b)
	for _, c := range b {
		switch c {
		case '\n', '\r', '\t', '\b', '\f', '"', '\\':
			n++
		default:
			if c < 0x20 {
				n += 5
			}
		}
	}
	return n
}

// DecodeEnvelope parses an envelope member into the message it delivers.
// Every error wraps ErrInvalidEnvelope.
func DecodeEnvelope(member []byte) (Message, error) { return decodeEnvelope(member, false) }

// decodeEnvelope is DecodeEnvelope; owned says the member is the caller's
// own copy, which the message's body may share instead of copying it.
func decodeEnvelope(member []byte, owned bool) (Message, error) {
	e, err := parseEnvelope(member)
	if err != nil {
		return Message{}, err
	}
	if !owned {
		e.body = bytes.Clone(e.body) // the caller keeps member
	}
	body, err := e.decodeBody()
	if err != nil {
		return Message{}, err
	}
	return Message{ID: e.id, Body: body, Headers: e.headers, RoutingKey: e.routingKey,
		EmptyKey: e.keyB64 != nil && e.routingKey == "", Properties: e.properties, Key: e.key}, nil
}

// EnvelopeID returns the id of an envelope member without decoding its body.
func EnvelopeID(member []byte) (string, error) {
	e, err := parseEnvelope(member)
	if err != nil {
		return "", err
	}
	return e.id, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidEnvelope, fmt.Sprintf(format, args...))
}

// parseEnvelope reads the top-level object key by key, so duplicate and
// unknown fields are caught (encoding/json would take the last duplicate and
// match field names case-insensitively).
func parseEnvelope(member []byte) (envelope, error) {
	var e envelope
	if !utf8.Valid(member) {
		return e, invalid("not valid UTF-8 (a binary body goes in body_b64)")
	}
	fields, err := topFields(member)
	if err != nil {
		return e, err
	}
	seen := map[string]bool{}
	for _, f := range fields {
		var key string
		if err := json.Unmarshal(f.key, &key); err != nil {
			return e, invalid("%v", err)
		}
		if seen[key] {
			return e, invalid("field %q appears twice", key)
		}
		seen[key] = true
		if key == "body" {
			// The body is kept as the member's own bytes, not copied
			// through a decoder's buffer: a body of megabytes costs no
			// copy to parse (DecodeEnvelope copies it once, EnvelopeID
			// never).
			e.body = f.value
			continue
		}
		if v := f.value; key == "body_b64" && len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 {
			var none string
			e.bodyB64, e.b64Text = &none, v[1:len(v)-1]
			continue
		}
		err = e.field(json.NewDecoder(bytes.NewReader(f.value)), key)
		if err != nil {
			if !errors.Is(err, ErrInvalidEnvelope) {
				err = invalid("field %q: %v", key, err)
			}
			return e, err
		}
	}
	if len(e.headers) == 0 {
		e.headers = nil // {} and null mean no headers, as an absent field does
	}
	if string(e.body) == "null" {
		e.body = nil
	}
	if e.body != nil && e.bodyB64 != nil {
		return e, invalid("both body and body_b64 are set")
	}
	if len(e.routingKey) > MaxFieldLen {
		return e, invalid("routing_key is more than %d bytes (a longer key goes in routing_key_b64)", MaxFieldLen)
	}
	if err := e.decodeBinary(); err != nil {
		return e, err
	}
	if err := checkEnvelope(e.id, e.headers, e.routingKey); err != nil {
		return e, err
	}
	if err := CheckKey(e.key); err != nil {
		return e, err
	}
	return e, nil
}

// field decodes the value of the top-level field key into e.
func (e *envelope) field(dec *json.Decoder, key string) (err error) {
	switch key {
	case "id":
		err = decodeString(dec, key, &e.id)
	case "body":
		err = dec.Decode(&e.body)
	case "body_b64":
		var s string
		err = decodeString(dec, key, &s)
		e.bodyB64 = &s
	case "headers":
		if err = dec.Decode(&e.headers); err != nil {
			err = invalid("headers must be an object of strings")
		}
	case "headers_b64":
		if err = dec.Decode(&e.headersB64); err != nil {
			err = invalid("headers_b64 must be an object of strings")
		}
	case "routing_key":
		err = decodeString(dec, key, &e.routingKey)
	case "routing_key_b64":
		e.keyB64, err = decodeOptString(dec, key)
	case "properties":
		e.properties, err = decodeProperties(dec)
	case "key":
		err = decodeString(dec, key, &e.key)
	default:
		return invalid("unknown field %q", key)
	}
	return err
}

func decodeString(dec *json.Decoder, key string, s *string) error {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	if len(raw) == 0 || raw[0] != '"' {
		if string(raw) == "null" {
			return nil
		}
		return invalid("%s must be a string", key)
	}
	return json.Unmarshal(raw, s)
}

// checkEnvelope validates the fields EncodeEnvelope and DecodeEnvelope share.
// Header values and the key are bytes: whatever is not text goes in the
// _b64 fields.
func checkEnvelope(id string, headers map[string]string, routingKey string) error {
	if err := CheckID(id); err != nil {
		return err
	}
	for name := range headers {
		switch {
		case name == "" || len(name) > MaxFieldLen:
			return invalid("header name %q must be 1 to %d bytes", name, MaxFieldLen)
		case !utf8.ValidString(name):
			return invalid("header name %q is not valid UTF-8", name)
		case strings.HasPrefix(strings.ToLower(name), ReservedHeaderPrefix):
			return invalid("header %q: names starting with %s are delaybridge's own", name, ReservedHeaderPrefix)
		}
	}
	if len(routingKey) > MaxKeyLen {
		return invalid("routing key is %d bytes, more than %d", len(routingKey), MaxKeyLen)
	}
	return nil
}

// CheckKey reports whether key can be a message's fair-share key: "" (no
// key), or up to MaxFairKeyLen bytes of UTF-8 without control characters
// (a fair topic's per-key state separates a key from a due time by a NUL).
func CheckKey(key string) error {
	if len(key) > MaxFairKeyLen {
		return invalid("key is %d bytes, more than %d", len(key), MaxFairKeyLen)
	}
	if !utf8.ValidString(key) {
		return invalid("key is not valid UTF-8")
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return invalid("key %q holds a control character", key)
		}
	}
	return nil
}

// CheckID reports whether id can name an envelope message: 1 to MaxIDLen
// bytes of UTF-8 without control characters.
func CheckID(id string) error {
	if id == "" {
		return invalid("id is empty")
	}
	if len(id) > MaxIDLen {
		return invalid("id is %d bytes, more than %d", len(id), MaxIDLen)
	}
	if !utf8.ValidString(id) {
		return invalid("id is not valid UTF-8")
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return invalid("id %q holds a control character", id)
		}
	}
	return nil
}
