package queue

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// FuzzParseWake feeds ParseWake what any Redis client could publish on the
// wake channel: it never panics, and what it accepts is a wake-up a scanner
// can act on (a slot number, a score that is not NaN) and reads back the
// same from its own payload; a payload whose score alone is unusable still
// names its slot, due at once.
func FuzzParseWake(f *testing.F) {
	for _, seed := range []string{
		"orders\n3\n1764000000000",
		"orders.eu\n1023\n1764000000000.5",
		"orders\n0\n-Inf",
		"orders\n0\n+Inf",
		"orders\n0\nNaN",
		"orders\n-1\n1",
		"orders\n1",
		"\n1\n2",
		"a\nb\nc\nd",
		"orders\n99999999999999999999\n1",
		"orders\n1\n0x1p-2",
		"orders\n1\n1e400",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		w, err := ParseWake(payload)
		if errors.Is(err, ErrWakeScore) {
			// Only the score is unusable: the slot is named, to look at once.
			if w.Topic == "" || w.Slot < 0 || !math.IsInf(w.Score, -1) {
				t.Fatalf("ParseWake(%q) = %+v with %v, want the topic and slot with score -Inf", payload, w, err)
			}
			return
		}
		if err != nil {
			return
		}
		if w.Topic == "" || strings.Contains(w.Topic, "\n") {
			t.Fatalf("ParseWake(%q) accepted topic %q", payload, w.Topic)
		}
		if w.Slot < 0 {
			t.Fatalf("ParseWake(%q) accepted slot %d", payload, w.Slot)
		}
		if math.IsNaN(w.Score) {
			t.Fatalf("ParseWake(%q) accepted a NaN score", payload)
		}
		again, err := ParseWake(w.Payload())
		if err != nil || again != w {
			t.Fatalf("ParseWake(%q) = %+v, but its payload %q reads back as %+v, %v", payload, w, w.Payload(), again, err)
		}
	})
}
