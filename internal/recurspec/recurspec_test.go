package recurspec

import (
	"errors"
	"testing"
	"time"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestParseSpecRefusesBadSpecsWithAClearError(t *testing.T) {
	for _, c := range []struct{ spec, tz string }{
		{"", ""},
		{"* * *", ""},
		{"61 * * * *", ""},
		{"@every 500ms", ""},
		{"@every", ""},
		{"@every soon", ""},
		{"@fortnightly", ""},
		{"CRON_TZ=Europe/Berlin 0 9 * * *", ""},
		{"0 9 * * *", "Mars/Olympus"},
		{"0 9 * * *\x00", ""},
	} {
		if _, err := Parse(c.spec, c.tz); !errors.Is(err, ErrBadSpec) {
			t.Errorf("Parse(%q, %q) = %v, want ErrBadSpec", c.spec, c.tz, err)
		}
	}
	for _, spec := range []string{"*/5 * * * *", "*/3 * * * * *", "@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@every 1s", "@every 1h30m"} {
		if _, err := Parse(spec, "Europe/Berlin"); err != nil {
			t.Errorf("Parse(%q) = %v", spec, err)
		}
	}
}

// ticks lists the n ticks after from, each delivered on time.
func ticks(t *testing.T, s Spec, from time.Time, n int) []time.Time {
	t.Helper()
	var out []time.Time
	at := from
	for range n {
		next, skipped, ok := s.Next(at, at)
		if !ok || skipped != 0 {
			t.Fatalf("Next(%s) = %s, skipped %d, ok %v", at, next, skipped, ok)
		}
		out = append(out, next)
		at = next
	}
	return out
}

func TestDaylightSavingSkippedTimeFiresOnceAtTheEndOfTheGap(t *testing.T) {
	berlin, ny := mustZone(t, "Europe/Berlin"), mustZone(t, "America/New_York")
	for _, c := range []struct {
		spec string
		loc  *time.Location
		from time.Time
		want []string // RFC 3339, in loc
	}{
		// Berlin springs forward on 29 March 2026: 02:00 CET → 03:00 CEST.
		{"30 2 * * *", berlin, time.Date(2026, 3, 27, 12, 0, 0, 0, berlin),
			[]string{"2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{"*/20 * * * *", berlin, time.Date(2026, 3, 29, 1, 30, 0, 0, berlin),
			[]string{"2026-03-29T01:40:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T03:20:00+02:00"}},
		// New York springs forward on 8 March 2026: 02:00 EST → 03:00 EDT.
		{"15 2 * * *", ny, time.Date(2026, 3, 7, 12, 0, 0, 0, ny),
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:15:00-04:00"}},
	} {
		s, err := Parse(c.spec, c.loc.String())
		if err != nil {
			t.Fatal(err)
		}
		got := ticks(t, s, c.from, len(c.want))
		for i, w := range c.want {
			if g := got[i].In(c.loc).Format(time.RFC3339); g != w {
				t.Errorf("%s in %s: tick %d = %s, want %s", c.spec, c.loc, i, g, w)
			}
		}
	}
}

func TestDaylightSavingRepeatedTimeFiresOnce(t *testing.T) {
	berlin, ny := mustZone(t, "Europe/Berlin"), mustZone(t, "America/New_York")
	for _, c := range []struct {
		spec string
		loc  *time.Location
		from time.Time
		want []string
	}{
		// Berlin falls back on 25 October 2026: 03:00 CEST → 02:00 CET.
		{"30 2 * * *", berlin, time.Date(2026, 10, 24, 12, 0, 0, 0, berlin),
			[]string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"0 * * * *", berlin, time.Date(2026, 10, 25, 1, 30, 0, 0, berlin),
			[]string{"2026-10-25T02:00:00+02:00", "2026-10-25T03:00:00+01:00", "2026-10-25T04:00:00+01:00"}},
		// New York falls back on 1 November 2026: 02:00 EDT → 01:00 EST.
		{"30 1 * * *", ny, time.Date(2026, 10, 31, 12, 0, 0, 0, ny),
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"0 9 * * *", ny, time.Date(2026, 10, 31, 12, 0, 0, 0, ny),
			[]string{"2026-11-01T09:00:00-05:00", "2026-11-02T09:00:00-05:00"}},
	} {
		s, err := Parse(c.spec, c.loc.String())
		if err != nil {
			t.Fatal(err)
		}
		got := ticks(t, s, c.from, len(c.want))
		for i, w := range c.want {
			if g := got[i].In(c.loc).Format(time.RFC3339); g != w {
				t.Errorf("%s in %s: tick %d = %s, want %s", c.spec, c.loc, i, g, w)
			}
		}
	}
}

// A tick created inside the repeated hour, in its second occurrence, still
// never goes back in time.
func TestDaylightSavingNeverGoesBack(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	s, err := Parse("*/15 * * * *", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	second := time.Date(2026, 10, 25, 1, 10, 0, 0, time.UTC) // 02:10 CET, the second 02:10
	next, ok := s.First(second)
	if want := time.Date(2026, 10, 25, 3, 0, 0, 0, berlin); !ok || !next.Equal(want) {
		t.Errorf("First(%s) = %s, want %s", second.In(berlin), next.In(berlin), want)
	}
}

func TestEveryKeepsItsPhaseAndSkipsAGapToOneTick(t *testing.T) {
	s, err := Parse("@every 2s", "")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first, _ := s.First(start.Add(1300 * time.Millisecond))
	if want := start.Add(3 * time.Second); !first.Equal(want) {
		t.Fatalf("First = %s, want %s", first, want)
	}
	// On time, or a little late: the next is one period on.
	for _, late := range []time.Duration{0, 3 * time.Millisecond, 1999 * time.Millisecond} {
		next, skipped, _ := s.Next(first, first.Add(late))
		if want := first.Add(2 * time.Second); !next.Equal(want) || skipped != 0 {
			t.Errorf("late %s: Next = %s, skipped %d, want %s, 0", late, next, skipped, want)
		}
	}
	// Delivered 7 s late: the ticks at +2, +4, +6 were missed; +8 is next.
	next, skipped, _ := s.Next(first, first.Add(7*time.Second))
	if want := first.Add(8 * time.Second); !next.Equal(want) || skipped != 3 {
		t.Errorf("after a gap: Next = %s, skipped %d, want %s, 3", next, skipped, want)
	}
}

func TestCronGapDeliversOneTickThenContinuesOnSchedule(t *testing.T) {
	s, err := Parse("0 9 * * *", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	berlin := mustZone(t, "Europe/Berlin")
	tick := time.Date(2026, 5, 4, 9, 0, 0, 0, berlin)
	// The 09:00 digest went out at 09:03: tomorrow's is next, none skipped.
	next, skipped, _ := s.Next(tick, tick.Add(3*time.Minute))
	if want := tick.AddDate(0, 0, 1); !next.Equal(want) || skipped != 0 {
		t.Errorf("Next = %s, skipped %d, want %s, 0", next, skipped, want)
	}
	// Three days of outage: one goes out, two were skipped, then on schedule.
	next, skipped, _ = s.Next(tick, tick.AddDate(0, 0, 2).Add(time.Hour))
	if want := tick.AddDate(0, 0, 3); !next.Equal(want) || skipped != 2 {
		t.Errorf("Next = %s, skipped %d, want %s, 2", next, skipped, want)
	}
}

func TestSecondsFieldAndDescriptors(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	for _, c := range []struct {
		spec string
		want time.Time
	}{
		{"*/3 * * * * *", from.Add(2 * time.Second)},
		{"@hourly", time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)},
		{"@daily", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)},
		{"@monthly", time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)},
		{"@yearly", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		s, err := Parse(c.spec, "")
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := s.First(from); !got.Equal(c.want) {
			t.Errorf("%s: First = %s, want %s", c.spec, got, c.want)
		}
	}
}

// A per-second cron spec after a day-long gap: the count stops at
// maxSkipped, and the next tick is still the first after now.
func TestLongGapOfAFastCronSpecIsBounded(t *testing.T) {
	s, err := Parse("* * * * * *", "")
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := tick.Add(24*time.Hour + 300*time.Millisecond)
	next, skipped, ok := s.Next(tick, now)
	if want := tick.Add(24*time.Hour + time.Second); !ok || !next.Equal(want) || skipped != maxSkipped {
		t.Errorf("Next = %s, skipped %d, ok %v; want %s, %d", next, skipped, ok, want, maxSkipped)
	}
}
