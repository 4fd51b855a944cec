package queue

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Scores are due times in Unix milliseconds, as float64 (a ZSET score). The
// conversions live here so the forwarder and producers round the same way.

// ErrBadDueTime reports a due time that cannot be honoured exactly.
var ErrBadDueTime = errors.New("due time cannot be honoured")

// Score converts a due time to a ZSET score in Unix milliseconds. It refuses
// times before 1970 and times whose millisecond a float64 cannot hold exactly
// (rounding could deliver them early).
func Score(due time.Time) (float64, error) {
	ms := due.UnixMilli()
	if due.Before(time.Unix(0, 0)) {
		return 0, fmt.Errorf("%w: %s is before 1970", ErrBadDueTime, due.UTC().Format(time.RFC3339Nano))
	}
	if due.Sub(time.UnixMilli(ms)) > 0 {
		ms++ // a due time inside a millisecond is honoured from its next one
	}
	f := float64(ms)
	if int64(f) != ms || f > 1<<53 {
		return 0, fmt.Errorf("%w: %d ms cannot be held exactly by a float64 score", ErrBadDueTime, ms)
	}
	return f, nil
}

// Millis is t in Unix milliseconds with the rest as a fraction, the unit of
// scores and of Redis's TIME as the scripts return it. Unlike Score it never
// rounds, so it serves comparisons with scores (is this wake-up earlier than
// the time a scanner sleeps until?), not writing them.
func Millis(t time.Time) float64 {
	return float64(t.UnixNano()) / float64(time.Millisecond)
}

// MillisTime converts a score in Unix milliseconds to a time. Whole
// milliseconds convert exactly (a due header never shifts by one).
func MillisTime(ms float64) time.Time {
	if math.IsInf(ms, 0) || math.IsNaN(ms) || math.Abs(ms) > 1<<62 {
		return time.Time{}
	}
	whole := math.Floor(ms)
	frac := time.Duration((ms - whole) * float64(time.Millisecond))
	return time.UnixMilli(int64(whole)).Add(frac)
}
