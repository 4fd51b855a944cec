package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/membership"
)

// TestTopicNoDaemonForwardsIsNeverSilent: a live daemon runs orders and
// legacy; this shell also configures payments. Scheduling to payments (and
// setting a recurrence on it) is accepted with a warning, stats names the
// reason beside the overdue figure, replicas does not credit the daemon
// with payments' slot, and topics lists payments with a note. Before, all
// of them were silent and replicas printed "1/1: 0" for payments.
func TestTopicNoDaemonForwardsIsNeverSilent(t *testing.T) {
	e := newCLIEnv(t)
	prefix := e.orders.Prefix
	t.Setenv("DELAYBRIDGE_TOPICS", "orders,legacy,payments")
	set, err := membership.New(e.q).Heartbeat(e.ctx, prefix, "daemon-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := membership.New(e.q).ReportServed(e.ctx, prefix, "daemon-1", []string{"orders", "legacy"}, set.Live, time.Minute); err != nil {
		t.Fatal(err)
	}
	const warning = "no live replica forwards payments"

	code, _, stderr := e.run("", "schedule", "payments", "--in", "-2s", "hello")
	if code != exitOK || !strings.Contains(stderr, "warning: "+warning) {
		t.Errorf("schedule payments: exit %d, stderr %q: want 0 and the warning", code, stderr)
	}
	if code, _, stderr := e.run("", "schedule", "orders", "--in", "1h", "x"); code != exitOK || stderr != "" {
		t.Errorf("schedule orders: exit %d, stderr %q: want 0 and no warning", code, stderr)
	}
	code, _, stderr = e.run("", "recur", "set", "payments", "digest", "@every 1h", "ping")
	if code != exitOK || !strings.Contains(stderr, warning) {
		t.Errorf("recur set payments: exit %d, stderr %q: want 0 and the warning", code, stderr)
	}

	out := e.mustRun("", "stats", "payments")
	if !strings.Contains(out, "(no forwarder: see below)") || !strings.Contains(out, "payments: "+warning) {
		t.Errorf("stats payments does not name the reason:\n%s", out)
	}
	if out := e.mustRun("", "stats", "orders"); strings.Contains(out, "no forwarder") {
		t.Errorf("stats orders names a reason it does not have:\n%s", out)
	}

	out = e.mustRun("", "replicas")
	if !strings.Contains(out, "not run") || !strings.Contains(out, "payments: "+warning) {
		t.Errorf("replicas credits the daemon with payments or says nothing:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "daemon-1") && !strings.HasSuffix(strings.TrimSpace(line), "not run") {
			t.Errorf("replica row %q: the last column (PAYMENTS) must read \"not run\"", line)
		}
	}

	out = e.mustRun("", "topics")
	if !strings.Contains(out, "payments: in this shell's DELAYBRIDGE_TOPICS, not registered; "+warning) {
		t.Errorf("topics leaves payments out:\n%s", out)
	}
}
