package flowstate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/delaybridge/delaybridge/queue"
)

// Each daemon reports the limits its environment gives a topic in the
// topic's env HASH; a report is read until its replica deletes it (clean
// shutdown) or its deadline passes (a replica that was killed).
func TestEnvReportsAreSeenUntilDeletedOrExpired(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.FormatRaw, 1)
	other := queue.Topic{Name: "other", Prefix: f.tp.Prefix}
	a, b := EnvLimits(300, "", 0), EnvLimits(0.5, "work queue 7", 1000)
	if err := f.s.ReportEnv(f.ctx, f.tp, "b", &b, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := f.s.ReportEnv(f.ctx, f.tp, "a", &a, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := f.s.EnvOf(f.ctx, []queue.Topic{f.tp, other})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]ReplicaLimits{{{Replica: "a", Rate: 300, HoldAbove: -1}, {Replica: "b", Rate: 0.5, HoldQueue: "work queue 7", HoldAbove: 1000}}, nil}
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(ReplicaLimits{}, "Until")); d != "" {
		t.Fatalf("env reports (-want +got):\n%s", d)
	}
	if got[0][0].Until.Before(time.Now().Add(50 * time.Second)) {
		t.Errorf("a's report until %s, want about a minute ahead", got[0][0].Until)
	}
	// b stops renewing (killed): its report is gone after its deadline.
	time.Sleep(400 * time.Millisecond)
	got, err = f.s.EnvOf(f.ctx, []queue.Topic{f.tp})
	if err != nil || len(got[0]) != 1 || got[0][0].Replica != "a" {
		t.Fatalf("after b's deadline: %+v, %v; want only a's report", got, err)
	}
	// a shuts down cleanly: it deletes its report, and the key goes.
	if err := f.s.ReportEnv(f.ctx, f.tp, "a", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := f.rdb.Exists(f.ctx, f.tp.FlowKeys().Env).Result(); err != nil || n != 0 {
		t.Errorf("env key exists (%d, %v) after every report was deleted or expired", n, err)
	}
}

func TestEnvReportKeyIsInTheTopicsHashTagAndExpiresWithItsReports(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.FormatRaw, 1)
	if k := f.tp.FlowKeys().Env; k != f.tp.FlowKeys().Limits[:len(k)-len(":env")]+":env" {
		t.Errorf("env key %q is not beside the limits key %q", k, f.tp.FlowKeys().Limits)
	}
	env := EnvLimits(5, "", 0)
	if err := f.s.ReportEnv(f.ctx, f.tp, "a", &env, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	ttl, err := f.rdb.PTTL(f.ctx, f.tp.FlowKeys().Env).Result()
	if err != nil || ttl <= 0 || ttl > 2*time.Second+10*time.Millisecond {
		t.Errorf("env key's TTL = %s (%v), want at most the report's 2 s", ttl, err)
	}
}
