package forwarder

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestFormatDueIsRFC3339Nano: the publish span's due attribute reads as
// time.RFC3339Nano does, for whole seconds, milliseconds, nanoseconds,
// other zones and years the fast path leaves to time.Format.
func TestFormatDueIsRFC3339Nano(t *testing.T) {
	zone := time.FixedZone("x", -7*3600-30*60)
	times := []time.Time{
		time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 100, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 10, zone),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
		time.UnixMilli(0),
		time.UnixMilli(1_764_320_400_123).In(zone),
		{},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		ns := r.Int64N(4e18) - 1e18
		if r.IntN(2) == 0 {
			ns -= ns % 1e6 // due times are whole milliseconds
		}
		times = append(times, time.Unix(0, ns).In(zone))
	}
	for _, tm := range times {
		if got, want := formatDue(tm), tm.UTC().Format(time.RFC3339Nano); got != want {
			t.Fatalf("formatDue(%v) = %q, want %q", tm, got, want)
		}
	}
}
