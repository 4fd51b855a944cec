package cli

import (
	"regexp"
	"testing"
)

// TestRecurShowsTheNextTickInItsZonesTime: "0 9 * * *" in Europe/Berlin
// showed its next tick in UTC only (08:00 or 07:00); the zone's 09:00 now
// stands beside it, in set and ls.
func TestRecurShowsTheNextTickInItsZonesTime(t *testing.T) {
	e := newCLIEnv(t)
	local := regexp.MustCompile(`= \d{4}-\d\d-\d\d 09:00:00 CES?T`)
	out := e.mustRun("", "recur", "set", "orders", "digest", "0 9 * * *", "--tz", "Europe/Berlin", "x")
	if !local.MatchString(out) {
		t.Errorf("recur set does not show the zone's 09:00:\n%s", out)
	}
	if out := e.mustRun("", "recur", "ls", "orders"); !local.MatchString(out) {
		t.Errorf("recur ls does not show the zone's 09:00:\n%s", out)
	}
}
