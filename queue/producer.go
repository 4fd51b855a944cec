package queue

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Decisions the producer API reports; check them with errors.Is.
var (
	// ErrInFlight: the message is claimed (being delivered right now), so it
	// can no longer be cancelled or rescheduled; nothing was changed.
	ErrInFlight = errors.New("message is in flight")
	// ErrNotFound: no such message is scheduled (or dead, for the dead set).
	ErrNotFound = errors.New("no such message")
	// ErrNotEnvelope: the call needs a topic in envelope format, or a raw
	// topic was given an id, headers or a routing key.
	ErrNotEnvelope = errors.New("topic is not in envelope format")
	// ErrTick: the id names a recurrence's tick (TickID), which is not
	// cancelled on its own (its ack writes the next one): remove the
	// recurrence instead. Nothing was changed.
	ErrTick = errors.New("the id names a recurrence's tick")
)

// When is a due time: an instant (At) or a delay from Redis's clock (In,
// InSince). The zero When is due at once.
type When struct {
	at       time.Time
	in       time.Duration
	since    time.Time // InSince: the local moment in counts from
	relative bool
}

// At is due at t (refused when before 1970 or not exactly representable; see
// Score). A time already passed is due at once.
func At(t time.Time) When { return When{at: t} }

// In is due d after Redis's TIME when the call runs (the same clock the
// scanners use), rounded up to the next millisecond.
func In(d time.Duration) When { return When{in: d, relative: true} }

// InSince is due d after since, a moment of this process's clock that has
// passed (when a message was received, say), on Redis's clock: when the
// call runs, the time elapsed since then is taken off d and the rest is
// counted from Redis's TIME as In counts it (nothing when it has all
// elapsed: due at once). Only that elapsed time comes from the local clock,
// from its monotonic reading, so a local clock that disagrees with Redis's
// does not matter; a message that waited in the caller before its write is
// not due later for it. The wait after the elapsed time is read (the trip
// to Redis) still counts: never before since + d on Redis's clock.
func InSince(d time.Duration, since time.Time) When {
	return When{in: d, since: since, relative: true}
}

func (w When) String() string {
	if w.relative && !w.since.IsZero() {
		return "in " + w.in.String() + " since " + w.since.UTC().Format(time.RFC3339Nano)
	}
	if w.relative {
		return "in " + w.in.String()
	}
	return "at " + w.at.UTC().Format(time.RFC3339Nano)
}

// args are the mode and value a script takes ("at" score, or "in" delay).
func (w When) args() (mode, value string, err error) {
	if !w.relative && w.at.IsZero() {
		return "in", "0", nil
	}
	if w.relative {
		in := w.in
		if !w.since.IsZero() {
			in = max(in-time.Since(w.since), 0)
		}
		ms := in.Milliseconds()
		if in > time.Duration(ms)*time.Millisecond {
			ms++
		}
		return "in", strconv.FormatInt(ms, 10), nil
	}
	score, err := Score(w.at)
	if err != nil {
		return "", "", err
	}
	return "at", strconv.FormatFloat(score, 'f', -1, 64), nil
}

// Replaced says what a schedule replaced.
type Replaced int

const (
	// ReplacedNothing: the message is new.
	ReplacedNothing Replaced = iota
	// ReplacedScheduled: the member (raw) or id (envelope) was already
	// scheduled; it now has the new due time (and, for an id, the new content).
	ReplacedScheduled
	// ReplacedInFlight: the id's previous member was being delivered. That
	// delivery proceeds, but is never retried: the new member replaces it.
	ReplacedInFlight
)

func (r Replaced) String() string {
	switch r {
	case ReplacedScheduled:
		return "scheduled"
	case ReplacedInFlight:
		return "in-flight"
	default:
		return "nothing"
	}
}

// Receipt says where and when a message was scheduled.
type Receipt struct {
	Topic string
	Slot  int
	// ID is the envelope id, or MessageID(member) for raw members.
	ID     string
	Member string
	// Score is the due time in Unix ms, as stored (for a Duplicate, as
	// asked: nothing was stored).
	Score    float64
	Replaced Replaced
	// Duplicate: the id was delivered within its topic's dedup window
	// (Topic.DedupWindow of the daemon that acked it), so the schedule was
	// accepted as a no-op: nothing was written, and the message is not
	// delivered again.
	Duplicate bool
}

// Due is the due time.
func (r Receipt) Due() time.Time { return MillisTime(r.Score) }

// dueErr turns a script's refusal of a due time into ErrBadDueTime.
func dueErr(err error) error {
	if redis.HasErrorPrefix(err, "due time") {
		return fmt.Errorf("%w: %s", ErrBadDueTime, strings.TrimPrefix(err.Error(), "ERR "))
	}
	return full(err)
}

// needEnvelope checks that t is an envelope topic and id a valid id.
func (t Topic) needEnvelope(id string) error {
	if !t.envelope() {
		return fmt.Errorf("topic %s: by id: %w", t.Name, ErrNotEnvelope)
	}
	if err := CheckID(id); err != nil {
		return fmt.Errorf("topic %s: %w", t.Name, err)
	}
	return nil
}

// describe names a message in errors: by id when there is one.
func describe(member, id string) string {
	if id != "" {
		return "id " + strconv.Quote(id)
	}
	if len(member) > 64 {
		member = member[:64] + "…"
	}
	return "member " + strconv.Quote(member)
}
