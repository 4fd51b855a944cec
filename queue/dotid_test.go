package queue

import (
	"errors"
	"testing"
)

// TestDotIDsAreRefused: "." and ".." cannot be named in a URL path (the
// API's GET, PATCH and DELETE by id never reached them), so no front door
// schedules them: not as a message a producer encodes or schedules
// encoded, nor as a recurrence. An envelope stored with one before the rule
// still decodes and encodes again (it is delivered, not dead-lettered).
func TestDotIDsAreRefused(t *testing.T) {
	topic := Topic{Name: "t", Format: FormatEnvelope}
	for _, id := range []string{".", ".."} {
		if _, err := topic.Encode(Message{ID: id, Body: []byte("x")}); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("Encode id %q: %v, want ErrInvalidEnvelope", id, err)
		}
		stored := []byte(`{"id":"` + id + `","body":"x"}`)
		if _, _, err := topic.scheduleCall(stored, In(0)); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("schedule of an encoded id %q: %v, want ErrInvalidEnvelope", id, err)
		}
		if _, _, err := (Recurrence{ID: id, Spec: "@every 1m"}).encode(); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("recurrence id %q: %v, want ErrInvalidEnvelope", id, err)
		}
		m, err := DecodeEnvelope(stored)
		if err != nil {
			t.Fatalf("stored id %q does not decode: %v", id, err)
		}
		if _, err := EncodeEnvelope(m); err != nil {
			t.Errorf("stored id %q does not encode again: %v", id, err)
		}
	}
	if _, err := topic.Encode(Message{ID: "...", Body: []byte("x")}); err != nil {
		t.Errorf("id ...: %v", err)
	}
}
