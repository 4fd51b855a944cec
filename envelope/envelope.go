package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

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

// envelopeOut is the canonical encoding written by Encode.
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

// Encode returns the member that carries m on an envelope topic. A
// body that is valid UTF-8 is written as a JSON string, any other as
// body_b64; so is a text body whose JSON escapes would make it longer than
// base64 does (control bytes are six bytes each as \u0001: a member, and
// each copy a script makes of it, would cost six times the body). The encoding is deterministic (header names sorted), so the same
// message always gives the same member.
func Encode(m Message) ([]byte, error) {
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
// Encode's encoder writes it: a control byte is six bytes
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

// Decode parses an envelope member into the message it delivers.
// Every error wraps ErrInvalid.
func Decode(member []byte) (Message, error) { return decode(member, false) }

// DecodeOwned is Decode of a member that is the caller's own copy: the
// message's body may share it instead of copying it.
func DecodeOwned(member []byte) (Message, error) { return decode(member, true) }

// decode is Decode; owned says the member is the caller's
// own copy, which the message's body may share instead of copying it.
func decode(member []byte, owned bool) (Message, error) {
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

// ID returns the id of an envelope member without decoding its body.
func ID(member []byte) (string, error) {
	e, err := parseEnvelope(member)
	if err != nil {
		return "", err
	}
	return e.id, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
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
			// copy to parse (Decode copies it once, ID
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
			if !errors.Is(err, ErrInvalid) {
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
