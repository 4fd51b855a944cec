package envelope

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// The binary-safe fields of an envelope (headers_b64, routing_key_b64):
// Kafka keys and header values are bytes, and JSON strings hold only text.

// splitHeaders splits headers into those whose values are text and those
// whose values go in base64; nil for an empty part.
func splitHeaders(headers map[string]string) (text, b64 map[string]string) {
	for name, value := range headers {
		if utf8.ValidString(value) {
			if text == nil {
				text = make(map[string]string, len(headers))
			}
			text[name] = value
			continue
		}
		if b64 == nil {
			b64 = map[string]string{}
		}
		b64[name] = base64.StdEncoding.EncodeToString([]byte(value))
	}
	return text, b64
}

// splitKey writes a key as text when routing_key can hold it (UTF-8, 1 to
// MaxFieldLen bytes), else in base64; an absent key is neither.
func splitKey(key string, empty bool) (text string, b64 *string) {
	switch {
	case key == "" && !empty:
		return "", nil
	case key != "" && len(key) <= MaxFieldLen && utf8.ValidString(key):
		return key, nil
	}
	s := base64.StdEncoding.EncodeToString([]byte(key))
	return "", &s
}

// decodeBinary merges headers_b64 into the headers and routing_key_b64 into
// the routing key.
func (e *envelope) decodeBinary() error {
	if e.keyB64 != nil {
		if e.routingKey != "" {
			return invalid("both routing_key and routing_key_b64 are set")
		}
		k, err := base64.StdEncoding.DecodeString(*e.keyB64)
		if err != nil {
			return invalid("routing_key_b64 is not standard base64: %v", err)
		}
		e.routingKey = string(k)
	}
	for name, value := range e.headersB64 {
		if _, ok := e.headers[name]; ok {
			return invalid("header %q is in both headers and headers_b64", name)
		}
		v, err := base64.StdEncoding.DecodeString(value)
		if err != nil {
			return invalid("headers_b64 %q is not standard base64: %v", name, err)
		}
		if e.headers == nil {
			e.headers = make(map[string]string, len(e.headersB64))
		}
		e.headers[name] = string(v)
	}
	return nil
}

// decodeOptString decodes a string field where null means absent (nil) and
// "" is a value.
func decodeOptString(dec *json.Decoder, key string) (*string, error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	if string(raw) == "null" {
		return nil, nil
	}
	if len(raw) == 0 || raw[0] != '"' {
		return nil, invalid("%s must be a string", key)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
