package queue

import (
	"testing"
)

// The id of a tick's envelope is read without a JSON decoder when it can
// be; it must be the id the decoder reads, whatever the id holds.
func TestTickEnvelopeIDIsTheDecodersID(t *testing.T) {
	for _, id := range []string{"daily-digest", "a", `quo"te`, `back\slash`, "<tag>&", "Grüße", "日本", "tab\tless", "r000001@x"} {
		env, err := EncodeEnvelope(Message{ID: id, Body: []byte("b")})
		if err != nil {
			if CheckID(id) != nil {
				continue // an id no envelope can carry
			}
			t.Fatalf("encode %q: %v", id, err)
		}
		want, err := EnvelopeID(env)
		if err != nil {
			t.Fatalf("EnvelopeID(%s): %v", env, err)
		}
		got, err := tickEnvelopeID(string(env))
		if err != nil || got != want {
			t.Errorf("tickEnvelopeID(%s) = %q, %v; want %q", env, got, err, want)
		}
	}
	// Not written by encode: the decoder decides, and refuses what is not an envelope.
	for _, env := range []string{`{"body":"b","id":"late"}`, `{"id":"x\u0041","body":"b"}`} {
		want, werr := EnvelopeID([]byte(env))
		got, gerr := tickEnvelopeID(env)
		if got != want || (werr == nil) != (gerr == nil) {
			t.Errorf("tickEnvelopeID(%s) = %q, %v; EnvelopeID: %q, %v", env, got, gerr, want, werr)
		}
	}
	if _, err := tickEnvelopeID(`{"id":`); err == nil {
		t.Error("a truncated envelope gave an id")
	}
}
