package queue

import (
	"errors"
	"testing"
)

// TestDotIDsAreRefused: "." and ".." cannot be named in a URL path (the
// API's GET, PATCH and DELETE by id never reached them), so no front door
// schedules them.
func TestDotIDsAreRefused(t *testing.T) {
	for _, id := range []string{".", ".."} {
		if _, err := EncodeEnvelope(Message{ID: id, Body: []byte("x")}); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("id %q: %v, want ErrInvalidEnvelope", id, err)
		}
	}
	if _, err := EncodeEnvelope(Message{ID: "...", Body: []byte("x")}); err != nil {
		t.Errorf("id ...: %v", err)
	}
}
