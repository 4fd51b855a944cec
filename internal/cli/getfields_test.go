package cli

import (
	"strings"
	"testing"
)

// TestGetShowsHeadersAndRoutingKey: get --id hid them outside --json.
func TestGetShowsHeadersAndRoutingKey(t *testing.T) {
	e := newCLIEnv(t)
	e.mustRun("", "schedule", "orders", "--in", "1h", "--id", "g1", "--header", "tenant=eu-1", "--routing-key", "orders.eu", "x")
	out := e.mustRun("", "get", "orders", "--id", "g1")
	for _, want := range []string{"routing key", "orders.eu", "header tenant", "eu-1"} {
		if !strings.Contains(out, want) {
			t.Errorf("get lacks %q:\n%s", want, out)
		}
	}
}
