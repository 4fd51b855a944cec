// Package recurspec parses a recurrence's spec and zone and finds its ticks:
// no Redis (package queue stores recurrences and keeps RecurSpec, ParseSpec,
// MinEvery and ErrBadSpec as its Go API's names for these).
//
// A recurrence's spec says when its ticks fall due: a 5-field cron
// expression (minute resolution), a 6-field one whose first field is
// seconds, a descriptor (@hourly, @daily, @weekly, @monthly, @yearly, and
// their aliases @midnight, @annually), or "@every D" (Go duration syntax,
// at least MinEvery).
//
// Cron fields are matched against the local wall clock of the recurrence's
// zone, and a matching wall time becomes one instant:
//   - a wall time that does not exist (the hour skipped when clocks spring
//     forward) fires once, at the first instant after the gap (02:30 on the
//     day Berlin springs forward fires at 03:00 CEST);
//   - a wall time that happens twice (the hour repeated when clocks fall
//     back) fires once, at its first occurrence.
//
// Several wall times that map to one instant are one tick. "@every D" is
// real elapsed time, whatever the zone: the ticks stay D apart and keep the
// phase they started on.

package recurspec

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // a zone works in an image without /usr/share/zoneinfo too

	"github.com/robfig/cron/v3"
)

// MinEvery is the shortest "@every" interval.
const MinEvery = time.Second

// ErrBadSpec is wrapped by every error about a recurrence's spec or zone.
var ErrBadSpec = errors.New("invalid recurrence spec")

// cronParser reads 5 or 6 fields and the descriptors; the zone comes from
// the recurrence, never from the spec.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Spec is a parsed recurrence spec in its zone (a cron expression or
// @every): when a recurring message falls due. Not to be confused with
// (*Queue).Schedule, which schedules one message.
type Spec struct {
	every time.Duration      // "@every": > 0
	spec  *cron.SpecSchedule // cron fields, matched on a wall clock kept in UTC
	loc   *time.Location
}

// Parse parses a recurrence's spec in the IANA zone tz ("" is UTC).
func Parse(spec, tz string) (Spec, error) {
	loc, err := loadZone(tz)
	if err != nil {
		return Spec{}, err
	}
	s := strings.TrimSpace(spec)
	switch {
	case s == "":
		return Spec{}, fmt.Errorf("%w: spec is empty", ErrBadSpec)
	case strings.ContainsAny(s, "\x00\n\r"):
		return Spec{}, fmt.Errorf("%w: spec %q holds a control character", ErrBadSpec, spec)
	case strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ="):
		return Spec{}, fmt.Errorf("%w: spec %q names a zone: give it as the recurrence's zone (--tz) instead", ErrBadSpec, spec)
	}
	if rest, ok := strings.CutPrefix(s, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return Spec{}, fmt.Errorf("%w: %q: %w", ErrBadSpec, spec, err)
		}
		if d < MinEvery {
			return Spec{}, fmt.Errorf("%w: %q: the interval must be at least %s", ErrBadSpec, spec, MinEvery)
		}
		return Spec{every: d, loc: loc}, nil
	}
	if strings.HasPrefix(s, "@every") {
		return Spec{}, fmt.Errorf("%w: %q: write @every DURATION, e.g. @every 5m", ErrBadSpec, spec)
	}
	parsed, err := cronParser.Parse(s)
	if err != nil {
		return Spec{}, fmt.Errorf("%w: %q: %w (a cron expression of 5 fields, e.g. \"0 9 * * *\", or @every DURATION, e.g. @every 5m)", ErrBadSpec, spec, err)
	}
	cs, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return Spec{}, fmt.Errorf("%w: %q is not a cron expression", ErrBadSpec, spec)
	}
	cs.Location = time.UTC
	return Spec{spec: cs, loc: loc}, nil
}

// CheckNewZone refuses "Local" for a recurrence being set (SetRecurrence
// runs it; the CLI too, before it reads a body or reaches Redis): each replica
// would tick in its own machine's zone. A recurrence stored with it before
// keeps ticking (Parse takes it), so an upgrade stops none.
func CheckNewZone(tz string) error {
	if strings.EqualFold(tz, "Local") {
		return fmt.Errorf("%w: zone %q is each machine's own: name an IANA zone (Europe/Paris) or UTC", ErrBadSpec, tz)
	}
	return nil
}

func loadZone(tz string) (*time.Location, error) {
	if tz == "" || tz == "UTC" {
		return time.UTC, nil
	}
	if strings.ContainsAny(tz, "\x00\n\r") {
		return nil, fmt.Errorf("%w: zone %q holds a control character", ErrBadSpec, tz)
	}
	if loc, ok := zones.Load(tz); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		if s := suggestZone(tz); s != "" {
			return nil, fmt.Errorf("%w: zone %q: %w (did you mean %s?)", ErrBadSpec, tz, err, s)
		}
		return nil, fmt.Errorf("%w: zone %q: %w (a tz database name such as Europe/Berlin)", ErrBadSpec, tz, err)
	}
	zones.Store(tz, loc)
	return loc, nil
}

// zones caches the zones loaded: time.LoadLocation reads the zone's file
// each time, and every settled batch of ticks parses its specs.
var zones sync.Map

// maxScan bounds the wall-clock matches after walks past before it gives
// up (a spec that matches only instants that never come, like 30 February).
const maxScan = 100000

// maxSkipped bounds the ticks Next counts one by one after a gap of a cron
// spec (a gap of days in a per-second spec); past it, it jumps to the first
// tick after now and reports maxSkipped.
const maxSkipped = 10000

// First is the first tick of a recurrence created at now: for "@every D",
// now rounded down to the second plus D (so "@every 1s" ticks on whole
// seconds); for a cron spec, its first match after now. ok is false when the
// spec never matches.
func (s Spec) First(now time.Time) (time.Time, bool) {
	if s.every > 0 {
		return now.Truncate(time.Second).Add(s.every), true
	}
	return s.after(now)
}

// Next is the tick after tick, delivered at now: the first tick of the
// schedule later than both (the gap rule: the ticks between tick and now
// were missed and are not replayed). skipped counts them, up to maxScan. ok
// is false when the spec never matches again. Skipped ticks of a cron spec
// are counted up to maxSkipped.
func (s Spec) Next(tick, now time.Time) (next time.Time, skipped int, ok bool) {
	if s.every > 0 {
		k := int64(1)
		if now.After(tick) {
			k = int64(now.Sub(tick)/s.every) + 1
		}
		return tick.Add(time.Duration(k) * s.every), int(k - 1), true
	}
	next, ok = s.after(tick)
	for ok && !next.After(now) && skipped < maxSkipped {
		skipped++
		next, ok = s.after(next)
	}
	if ok && !next.After(now) {
		next, ok = s.after(now)
	}
	return next, skipped, ok
}

// after is the first instant later than t that a wall time matching the
// cron fields maps to (see the package's rules on daylight saving).
func (s Spec) after(t time.Time) (time.Time, bool) {
	w := wall(t.In(s.loc))
	for i := 0; i < maxScan; i++ {
		w = s.spec.Next(w)
		if w.IsZero() {
			return time.Time{}, false
		}
		if at := instant(w, s.loc); at.After(t) {
			return at, true
		}
	}
	return time.Time{}, false
}

// wall is t's wall clock as a UTC time, where no hour is skipped or repeated.
func wall(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// instant maps wall time w (a UTC time holding local fields) to an instant
// in loc: its first occurrence when it happens twice, the end of the gap
// when it does not happen.
func instant(w time.Time, loc *time.Location) time.Time {
	naive := w.Unix()
	var found []time.Time
	for _, probe := range []int64{naive - 86400, naive + 86400} {
		_, off := time.Unix(probe, 0).In(loc).Zone()
		at := time.Unix(naive-int64(off), int64(w.Nanosecond())).In(loc)
		if wall(at).Equal(w) {
			found = append(found, at)
		}
	}
	switch {
	case len(found) == 2 && found[1].Before(found[0]):
		return found[1]
	case len(found) > 0:
		return found[0]
	}
	// In a gap: the wall time at the old offset lands after the transition,
	// in the zone period the transition starts.
	_, off := time.Unix(naive-86400, 0).In(loc).Zone()
	start, _ := time.Unix(naive-int64(off), 0).In(loc).ZoneBounds()
	return start
}
