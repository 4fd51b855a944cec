package main

import (
	"strings"
	"testing"
)

// TestTimesPrintWithMillisecondsAndCountsInTheRightNumber: due times
// printed as 04:34:17.1Z beside 04:34:17.123Z; "1 messages shown".
func TestTimesPrintWithMillisecondsAndCountsInTheRightNumber(t *testing.T) {
	e := newCLIEnv(t)
	out := e.mustRun("", "schedule", "orders", "--at", "2030-01-02T15:04:05.1Z", "--id", "a", "x")
	if !strings.Contains(out, "2030-01-02T15:04:05.100Z") {
		t.Errorf("schedule printed %q, want the due time with three decimals", out)
	}
	if out := e.mustRun("", "get", "orders", "--id", "a"); !strings.Contains(out, "2030-01-02T15:04:05.100Z") {
		t.Errorf("get printed %q, want the due time with three decimals", out)
	}
	if out := e.mustRun("", "ls", "orders"); !strings.Contains(out, "1 message shown") {
		t.Errorf("ls of one message printed %q", out)
	}
}
