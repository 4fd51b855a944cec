package recurspec

import (
	"errors"
	"strings"
	"testing"
)

// TestBadZoneAndSpecSuggestWhatWasMeant: "unknown time zone Berlin" did
// not suggest Europe/Berlin, and a bad cron spec did not suggest @every.
func TestBadZoneAndSpecSuggestWhatWasMeant(t *testing.T) {
	_, err := Parse("@daily", "Berlin")
	if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), "did you mean Europe/Berlin?") {
		t.Errorf("zone Berlin: %v, want a suggestion of Europe/Berlin", err)
	}
	_, err = Parse("every 5 minutes", "")
	if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), "@every 5m") {
		t.Errorf("bad spec: %v, want a suggestion of @every", err)
	}
}
