package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// topField is one field of a JSON object, as slices of the object's text.
type topField struct{ key, value []byte }

// topFields splits an envelope member into its top-level fields without
// copying a value: json.Valid checks the whole text first (allocating
// nothing), so the scan below only has to find where each value ends.
// Errors wrap ErrInvalid with the messages a decoder's would give.
func topFields(member []byte) ([]topField, error) {
	i := skipSpace(member, 0)
	if i == len(member) || member[i] != '{' {
		return nil, invalid("not a JSON object")
	}
	end := objectEnd(member, i)
	switch {
	case end == len(member) && (member[end-1] != '}' || !json.Valid(member)):
		return nil, invalid("unexpected EOF")
	case !json.Valid(member[:end]):
		var v struct{}
		return nil, invalid("%v", json.Unmarshal(member[:end], &v))
	}
	if skipSpace(member, end) != len(member) {
		return nil, invalid("data after the JSON object")
	}
	var fields []topField
	i = skipSpace(member, i+1)
	for member[i] != '}' {
		k := stringEnd(member, i)
		v := skipSpace(member, skipSpace(member, k)+1) // past ':'
		ve := valueEnd(member, v)
		fields = append(fields, topField{key: member[i:k], value: member[v:ve:ve]})
		i = skipSpace(member, ve)
		if member[i] == ',' {
			i = skipSpace(member, i+1)
		}
	}
	return fields, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index after the JSON string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// objectEnd is the index after the object or array that starts at b[i],
// or len(b) when it does not end.
func objectEnd(b []byte, i int) int {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			j = stringEnd(b, j) - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(b)
}

// valueEnd is the index after the JSON value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		return objectEnd(b, i)
	}
	j := i
	for j < len(b) && !slices.Contains([]byte(",}] \t\r\n"), b[j]) {
		j++
	}
	return j
}

// plainText reports whether encoding/json (HTML escaping off) writes b as
// a JSON string's content unchanged: UTF-8 with no quote, backslash,
// control byte, U+2028 or U+2029.
func plainText(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c == '"' || c == '\\' || c < 0x20 {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += n
	}
	return true
}

// spliceBody writes the envelope small (encoded without a body) with text
// (plain text: plainText, or base64) as its field (body or body_b64) where
// encoding/json puts either: right after the id, the first field, and the
// key (the fair-share key) when there is one. text is copied once, into a
// member of its exact size.
func spliceBody(small []byte, field string, text []byte) []byte {
	idEnd := stringEnd(small, len(`{"id":`))
	if key := `,"key":`; bytes.HasPrefix(small[idEnd:], []byte(key)) {
		idEnd = stringEnd(small, idEnd+len(key))
	}
	out := make([]byte, 0, len(small)+len(field)+len(text)+len(`,"":""`))
	out = append(out, small[:idEnd]...)
	out = append(out, `,"`...)
	out = append(out, field...)
	out = append(out, `":"`...)
	out = append(out, text...)
	out = append(out, '"')
	return append(out, small[idEnd:]...)
}

// decodeBody is the body of a parsed envelope: body_b64 decoded, or the
// body field (a string's text, any other JSON value as it is).
func (e envelope) decodeBody() ([]byte, error) {
	switch {
	case e.bodyB64 != nil:
		text := e.b64Text
		if text == nil {
			text = []byte(*e.bodyB64)
		}
		b := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
		n, err := base64.StdEncoding.Decode(b, text)
		b = b[:n]
		if err != nil {
			return nil, invalid("body_b64 is not standard base64: %v", err)
		}
		return b, nil
	case len(e.body) == 0:
		return []byte{}, nil
	case e.body[0] == '"':
		if bytes.IndexByte(e.body, '\\') < 0 {
			// Nothing to unescape: the text between the quotes is the body.
			// The decoder checked the literal (and the member is UTF-8),
			// and e.body is its own copy, so this costs no pass over a
			// body of megabytes and no copy of it.
			return e.body[1 : len(e.body)-1], nil
		}
		var s string
		if err := json.Unmarshal(e.body, &s); err != nil {
			return nil, invalid("body: %v", err)
		}
		return []byte(s), nil
	default:
		return []byte(e.body), nil
	}
}
