package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/flowstate"
)

// statsLimits is the limits of stats --json's only topic.
type statsLimits struct {
	Topics []struct {
		Limits limitsJSON `json:"limits"`
	}
}

// stats, replicas and topics show the limits the running daemons were
// started with, not the environment of the shell that runs them: two
// replicas started with different limits show both; a run-time limit wins
// over both and shows as such; a replica that stops, or dies and misses its
// deadline, drops out.
func TestStatsShowsTheLimitsTheDaemonsRunWithNotTheShells(t *testing.T) {
	exchange := uniqueName("dbtest.envlimits.")
	q, tp := amqpTopicEnv(t, exchange)
	declareBound(t, exchange)
	t.Setenv("DELAYBRIDGE_REPLICA_ID", "replica-a")
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_RATE_LIMIT", "300")
	startDaemon(t) // has read its environment once it listens
	t.Setenv("DELAYBRIDGE_REPLICA_ID", "replica-b")
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_RATE_LIMIT", "")
	b := startDaemon(t)
	t.Setenv("DELAYBRIDGE_REPLICA_ID", "")
	// This shell has no limit: what stats shows comes from the daemons.
	e := &cliEnv{t: t, ctx: t.Context(), q: q}
	both := "orders: rate limit 300/s on 1 replica (replica-a); no limit on 1 replica (replica-b) (environment)"
	within(t, 10*time.Second, "stats to show both replicas' limits", func() bool {
		return strings.Contains(e.mustRun("", "stats", "orders"), both)
	})
	var st statsLimits
	if err := json.Unmarshal([]byte(e.mustRun("", "stats", "--json", "orders")), &st); err != nil {
		t.Fatal(err)
	}
	l := st.Topics[0].Limits
	if l.Rate != 300 || l.Source != "environment" || len(l.Groups) != 2 || len(l.Replicas) != 2 ||
		l.Replicas[0].Replica != "replica-a" || l.Replicas[0].Rate != 300 || l.Replicas[1].Rate != 0 || l.Replicas[0].Until.IsZero() {
		t.Errorf("stats --json limits = %+v, want replica-a at 300/s and replica-b unlimited, from the environment", l)
	}
	if out := e.mustRun("", "replicas", "orders"); !strings.Contains(out, both) {
		t.Errorf("replicas lacks %q:\n%s", both, out)
	}
	var reps struct {
		Replicas []replicaRow `json:"replicas"`
	}
	if err := json.Unmarshal([]byte(e.mustRun("", "replicas", "--json", "orders")), &reps); err != nil || len(reps.Replicas) != 2 ||
		reps.Replicas[0].Env["orders"].Rate != 300 || reps.Replicas[1].Env["orders"].Rate != 0 {
		t.Errorf("replicas --json = %+v (%v), want each replica's environment limits", reps, err)
	}
	if out := e.mustRun("", "topics"); !strings.Contains(out, "rate limit 300/s on 1 replica (replica-a); no limit on 1 replica (replica-b) (environment)") {
		t.Errorf("topics does not show both replicas' limits:\n%s", out)
	}

	// A run-time limit wins on every replica, and says so.
	e.mustRun("", "limit", "orders", "--rate", "50")
	if out := e.mustRun("", "stats", "orders"); !strings.Contains(out, "orders: rate limit 50/s (run time)") {
		t.Errorf("stats with a run-time limit:\n%s", out)
	}
	if err := json.Unmarshal([]byte(e.mustRun("", "stats", "--json", "orders")), &st); err != nil ||
		st.Topics[0].Limits.Rate != 50 || st.Topics[0].Limits.Source != "run time" || len(st.Topics[0].Limits.Replicas) != 2 {
		t.Errorf("stats --json with a run-time limit = %+v (%v), want 50/s at run time over both reports", st, err)
	}
	e.mustRun("", "limit", "orders", "--off")

	// A replica that stops takes its report with it.
	if code := b.stop(30 * time.Second); code != exitOK {
		t.Fatalf("replica-b exit %d", code)
	}
	if out := e.mustRun("", "stats", "orders"); !strings.Contains(out, "orders: rate limit 300/s (environment)") {
		t.Errorf("stats after replica-b stopped:\n%s", out)
	}
	// One that died leaves its report until the deadline it last set.
	dead := flowstate.EnvLimits(5, "", 0)
	if err := flowstate.New(q).ReportEnv(e.ctx, tp, "replica-dead", &dead, time.Second); err != nil {
		t.Fatal(err)
	}
	if out := e.mustRun("", "stats", "orders"); !strings.Contains(out, "rate limit 300/s on 1 replica (replica-a); rate limit 5/s on 1 replica (replica-dead)") {
		t.Errorf("stats with a dead replica's report:\n%s", out)
	}
	within(t, 3*time.Second, "the dead replica's report to go", func() bool {
		return strings.Contains(e.mustRun("", "stats", "orders"), "orders: rate limit 300/s (environment)")
	})
}

// With no live daemon reporting a topic's limits, stats shows the shell's
// own, and says where they come from.
func TestStatsShowsTheShellsLimitsWhileNoDaemonReports(t *testing.T) {
	e := newCLIEnv(t)
	t.Setenv("DELAYBRIDGE_TOPIC_LEGACY_RATE_LIMIT", "50")
	if out := e.mustRun("", "stats", "legacy"); !strings.Contains(out, "legacy: rate limit 50/s (environment here: no live daemon reports its own)") {
		t.Errorf("stats without a daemon:\n%s", out)
	}
	var st statsLimits
	if err := json.Unmarshal([]byte(e.mustRun("", "stats", "--json", "legacy")), &st); err != nil ||
		st.Topics[0].Limits.Rate != 50 || st.Topics[0].Limits.Source != "here" || len(st.Topics[0].Limits.Replicas) != 0 {
		t.Errorf("stats --json = %+v (%v), want the shell's 50/s from here", st, err)
	}
}
