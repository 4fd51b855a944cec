package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
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

// TestDeadMessageShowsItsAttemptsInGetAndLs: after two refused publishes
// with MAX_ATTEMPTS=2, get and ls --state dead showed "attempts 0".
func TestDeadMessageShowsItsAttemptsInGetAndLs(t *testing.T) {
	e := newCLIEnv(t)
	e.mustRun("", "schedule", "legacy", "--in", "0s", "refused")
	for attempt := 1; attempt <= 2; attempt++ {
		var c queue.Claim
		for deadline := time.Now().Add(10 * time.Second); len(c.Messages) == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			var err error
			if c, err = e.q.Claim(e.ctx, e.legacy, 0, 1, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if len(c.Messages) != 1 {
			t.Fatalf("attempt %d: nothing to claim", attempt)
		}
		if _, err := e.q.Retry(e.ctx, e.legacy, 0, queue.Failure{Member: "refused", Backoff: time.Millisecond, Reason: "312 NO_ROUTE"}, 2); err != nil {
			t.Fatal(err)
		}
	}
	if out := e.mustRun("", "get", "legacy", "--member", "refused", "--json"); !strings.Contains(out, `"state":"dead"`) || !strings.Contains(out, `"attempts":2`) {
		t.Errorf("get of the dead message: %s", out)
	}
	if out := e.mustRun("", "ls", "legacy", "--state", "dead", "--json"); !strings.Contains(out, `"attempts":2`) {
		t.Errorf("ls --state dead: %s", out)
	}
}

func TestPluralSaysOneInTheSingular(t *testing.T) {
	for n, want := range map[int]string{0: "0 slots", 1: "1 slot", 2: "2 slots"} {
		if got := plural(n, "slot"); got != want {
			t.Errorf("plural(%d) = %q, want %q", n, got, want)
		}
	}
}
