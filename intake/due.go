package intake

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// Headers that set the due time. HeaderDelay is the delayed-message
// plugin's: milliseconds from when delaybridge takes the message in (AMQP)
// or after the record's timestamp (Kafka); absent or not above 0 is due at
// once. HeaderDue is an absolute due time, Unix milliseconds, and wins
// when both are set.
const (
	HeaderDelay = "x-delay"
	HeaderDue   = "x-delaybridge-due"
	// HeaderKey is the message's fair-share key (queue.Message.Key), on
	// either intake.
	HeaderKey = "x-delaybridge-key"
)

// maxScore is the largest score a float64 holds exactly, 2^53 ms: a later
// due time cannot be honoured (queue refuses it too).
const maxScore = 1 << 53

// number reads a header value as a whole number of milliseconds: any
// integer type, a finite float (truncated), or its decimal text.
func number(v any) (int64, error) {
	var f float64
	switch n := v.(type) {
	case int8, int16, int32, int64, int, uint8, uint16, uint32:
		i, _ := strconv.ParseInt(fmt.Sprint(n), 10, 64)
		return i, nil
	case uint64:
		if n > math.MaxInt64 {
			return 0, fmt.Errorf("%d is out of range", n)
		}
		return int64(n), nil
	case float32:
		f = float64(n)
	case float64:
		f = n
	case string:
		return numberText(n)
	case []byte:
		return numberText(string(n))
	default:
		return 0, fmt.Errorf("a %T is not a number", v)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > maxScore {
		return 0, fmt.Errorf("%v is not a finite number of milliseconds up to 2^53", f)
	}
	return int64(f), nil
}

func numberText(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return number(f)
}

// dueAt is the due time of an absolute x-delaybridge-due value.
func dueAt(v any) (queue.When, error) {
	ms, err := number(v)
	if err != nil {
		return queue.When{}, err
	}
	if ms < 0 || ms > maxScore {
		return queue.When{}, fmt.Errorf("%d ms is not a due time from 1970 to 2^53 ms", ms)
	}
	return queue.At(time.UnixMilli(ms)), nil
}

// delayFrom is the due time of an x-delay value: from is the moment the
// delay counts from on the producer's clock (Kafka: the record's
// timestamp), or the zero time for the moment the intake received the
// message (AMQP), which received is. That delay counts on Redis's clock:
// queue.InSince takes off the time the message then waited in the intake
// (its batch, the Redis round trip before it), so the wait does not make
// it due later; with received zero too it counts from the Redis write.
func delayFrom(v any, from, received time.Time) (queue.When, error) {
	ms, err := number(v)
	if err != nil {
		return queue.When{}, err
	}
	if ms > maxScore {
		return queue.When{}, fmt.Errorf("%d ms is further ahead than a due time can be (2^53 ms)", ms)
	}
	ms = max(ms, 0)
	if from.IsZero() {
		if ms <= math.MaxInt64/int64(time.Millisecond) {
			if received.IsZero() {
				return queue.In(time.Duration(ms) * time.Millisecond), nil
			}
			return queue.InSince(time.Duration(ms)*time.Millisecond, received), nil
		}
		from = time.Now() // centuries ahead: a Duration cannot hold it
	}
	return queue.At(time.UnixMilli(from.UnixMilli() + ms)), nil
}
