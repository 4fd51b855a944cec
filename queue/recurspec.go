package queue

import "github.com/delaybridge/delaybridge/internal/recurspec"

// A recurrence's spec and zone are parsed by internal/recurspec (no Redis);
// these are its names in the queue's Go API.

// RecurSpec is a parsed recurrence spec in its zone (a cron expression or
// @every): when a recurring message falls due. Not to be confused with
// (*Queue).Schedule, which schedules one message.
type RecurSpec = recurspec.Spec

// MinEvery is the shortest "@every" interval.
const MinEvery = recurspec.MinEvery

// ErrBadSpec is wrapped by every error about a recurrence's spec or zone.
var ErrBadSpec = recurspec.ErrBadSpec

// ParseSpec parses a recurrence's spec in the IANA zone tz ("" is UTC).
func ParseSpec(spec, tz string) (RecurSpec, error) { return recurspec.Parse(spec, tz) }

// CheckNewZone is recurspec.CheckNewZone.
func CheckNewZone(tz string) error { return recurspec.CheckNewZone(tz) }
