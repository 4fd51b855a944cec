package queue

import (
	"errors"
	"testing"
)

// TestLocalZoneIsRefused: "Local" is each replica's own zone, so each would
// tick at another instant; a recurrence set with it is refused (it was
// accepted). One stored with it before still ticks: ParseSpec takes it.
func TestLocalZoneIsRefused(t *testing.T) {
	for _, tz := range []string{"Local", "local"} {
		r := Recurrence{ID: "r", Spec: "@daily", Zone: tz, Message: Message{Body: []byte("x")}}
		if _, _, err := r.encode(); !errors.Is(err, ErrBadSpec) {
			t.Errorf("zone %q: %v, want ErrBadSpec", tz, err)
		}
	}
	r := Recurrence{ID: "r", Spec: "@daily", Zone: "Europe/Paris", Message: Message{Body: []byte("x")}}
	if _, _, err := r.encode(); err != nil {
		t.Errorf("Europe/Paris: %v", err)
	}
	if _, err := ParseSpec("@daily", "Local"); err != nil {
		t.Errorf("a stored recurrence in Local no longer parses: %v", err)
	}
}
