package cli

import (
	"strings"
	"testing"
)

// TestStatsShowsThePauseReasonInText: the reason was only in --json.
func TestStatsShowsThePauseReasonInText(t *testing.T) {
	e := newCLIEnv(t)
	e.mustRun("", "pause", "legacy", "--reason", "broker migration")
	if out := e.mustRun("", "stats", "legacy"); !strings.Contains(out, "yes: broker migration") {
		t.Errorf("stats does not show the pause's reason:\n%s", out)
	}
}
