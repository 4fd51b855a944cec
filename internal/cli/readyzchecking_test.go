package cli

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestReadyzSaysCheckingUntilTheDestinationWasChecked: from the first answer
// after start, /readyz is 503 for a topic whose exchange does not exist:
// "checking" while the first check has no answer (the sink still
// connecting), then naming the exchange; never 200 in between.
func TestReadyzSaysCheckingUntilTheDestinationWasChecked(t *testing.T) {
	exchange := uniqueName("dbtest.checking.")
	amqpTopicEnv(t, exchange)
	d := startDaemon(t)
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	var seen []string
	for {
		code, body := d.readyz()
		if len(seen) == 0 || seen[len(seen)-1] != body {
			seen = append(seen, body)
		}
		if code == http.StatusOK {
			t.Fatalf("/readyz 200 while the exchange %s is missing; answers so far: %q", exchange, seen)
		}
		if strings.Contains(body, "topic orders") && strings.Contains(body, exchange) {
			break
		}
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "checking") && !strings.Contains(body, "sink") {
			t.Fatalf("/readyz %d %q, want 503 checking (or the sink connecting)", code, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never named the missing exchange; answers: %q; logs:\n%s", seen, d.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("answers: %q", seen)
	// A check without an answer (the sink still connecting) is tried
	// again at once, not after the 5 s period.
	if took := time.Since(start); took > destinationCheckEvery-time.Second {
		t.Errorf("naming the missing exchange took %s, want well within the %s period", took, destinationCheckEvery)
	}
	if code := d.stop(30 * time.Second); code != exitOK {
		t.Errorf("daemon exit %d", code)
	}
}
