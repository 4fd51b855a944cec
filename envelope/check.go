package envelope

import (
	"strings"
	"unicode/utf8"
)

// checkEnvelope validates the fields Encode and Decode share.
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
