package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// TestEnvelopeSplicedBodyIsWhatTheEncoderWrites: a body spliced into the
// member (plain text, or base64) gives the very bytes encoding/json wrote
// before, with every other field around it; and it parses back.
func TestEnvelopeSplicedBodyIsWhatTheEncoderWrites(t *testing.T) {
	bodies := [][]byte{[]byte("x"), []byte("hello <world> & ü€😀"), {0xff, 0, 1, 2}, []byte(strings.Repeat("a", 100000)),
		[]byte("tab\there"), []byte("quote\"q"), []byte("sep\u2028x")}
	msgs := []Message{
		{ID: "a"},
		{ID: `we"ird\id`, Headers: map[string]string{"k": "v", "bin": "\xff"}, RoutingKey: "rk"},
		{ID: "p", RoutingKey: "\xfe", Properties: Properties{ContentType: "text/plain"}},
		{ID: "k", Key: "tenant-\"1\"", Headers: map[string]string{"h": "v"}},
	}
	for _, m := range msgs {
		for _, b := range bodies {
			m.Body = b
			got, err := Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			out := envelopeOut{ID: m.ID, Key: m.Key}
			out.Headers, out.HeadersB64 = splitHeaders(m.Headers)
			out.RoutingKey, out.KeyB64 = splitKey(m.RoutingKey, m.EmptyKey)
			if plainText(b) || escapedLen(b) <= base64.StdEncoding.EncodedLen(len(b)) && !bytes.ContainsRune(b, 0xfffd) && string(b) == strings.ToValidUTF8(string(b), "") {
				s := string(b)
				out.Body = &s
			} else {
				s := base64.StdEncoding.EncodeToString(b)
				out.BodyB64 = &s
			}
			if !m.Properties.IsZero() {
				p := m.Properties
				out.Properties = &p
			}
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(out)
			if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got, w) {
				t.Errorf("Encode(%q, body %.40q)\n got %.200s\nwant %.200s", m.ID, b, got, w)
			}
			back, err := Decode(got)
			if err != nil || !bytes.Equal(back.Body, b) || back.ID != m.ID {
				t.Errorf("decode of %.200s: %v, body %.40q", got, err, back.Body)
			}
			if id, err := ID(got); err != nil || id != m.ID {
				t.Errorf("ID: %q, %v", id, err)
			}
		}
	}
}
