package queue

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Each daemon reports the limits its environment gives a topic in the
// topic's env HASH; a report is read until its replica deletes it (clean
// shutdown) or its deadline passes (a replica that was killed).
func TestEnvReportsAreSeenUntilDeletedOrExpired(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	other := Topic{Name: "other", Prefix: f.tp.Prefix}
	a, b := EnvLimits(300, "", 0), EnvLimits(0.5, "work queue 7", 1000)
	if err := f.q.ReportEnv(f.ctx, f.tp, "b", &b, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := f.q.ReportEnv(f.ctx, f.tp, "a", &a, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := f.q.EnvOf(f.ctx, []Topic{f.tp, other})
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
	got, err = f.q.EnvOf(f.ctx, []Topic{f.tp})
	if err != nil || len(got[0]) != 1 || got[0][0].Replica != "a" {
		t.Fatalf("after b's deadline: %+v, %v; want only a's report", got, err)
	}
	// a shuts down cleanly: it deletes its report, and the key goes.
	if err := f.q.ReportEnv(f.ctx, f.tp, "a", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := f.rdb.Exists(f.ctx, f.tp.FlowKeys().Env).Result(); err != nil || n != 0 {
		t.Errorf("env key exists (%d, %v) after every report was deleted or expired", n, err)
	}
}

func TestEnvReportKeyIsInTheTopicsHashTagAndExpiresWithItsReports(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	if k := f.tp.FlowKeys().Env; k != f.tp.FlowKeys().Limits[:len(k)-len(":env")]+":env" {
		t.Errorf("env key %q is not beside the limits key %q", k, f.tp.FlowKeys().Limits)
	}
	env := EnvLimits(5, "", 0)
	if err := f.q.ReportEnv(f.ctx, f.tp, "a", &env, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	ttl, err := f.rdb.PTTL(f.ctx, f.tp.FlowKeys().Env).Result()
	if err != nil || ttl <= 0 || ttl > 2*time.Second+10*time.Millisecond {
		t.Errorf("env key's TTL = %s (%v), want at most the report's 2 s", ttl, err)
	}
}

func TestShownLimitsAreTheDaemonsReportsGroupedWithTheRunTimeOnesWinning(t *testing.T) {
	rate, hold := 50.0, 10
	here := EnvLimits(7, "", 0)
	r := func(id string, rate float64, q string, above int) ReplicaLimits {
		return ReplicaLimits{Replica: id, Rate: rate, HoldQueue: q, HoldAbove: above}
	}
	agree := []ReplicaLimits{r("a", 300, "", -1), r("b", 300, "", -1)}
	differ := []ReplicaLimits{r("a", 300, "", -1), r("b", 0, "", -1), r("c", 300, "", -1)}
	// b reports nothing: a daemon reports only the topics its environment
	// limits; live, it runs the topic unlimited.
	reported := []ReplicaLimits{r("c", 300, "", -1), r("a", 300, "", -1)}
	abc := ReplicaSet{Live: []string{"a", "b", "c"}, Deadlines: map[string]time.Time{"b": time.Now()}}
	for _, c := range []struct {
		name    string
		o       Override
		reports []ReplicaLimits
		live    ReplicaSet
		rate    float64
		source  string
		groups  int
		text    string
	}{
		{"no daemon known: this reader's environment", Override{}, nil, ReplicaSet{}, 7, SourceHere, 0,
			"rate limit 7/s (environment here: no live daemon reports its own)"},
		{"no daemon known, run time", Override{Rate: &rate}, nil, ReplicaSet{}, 50, SourceRunTime, 0, "rate limit 50/s (run time)"},
		{"the daemons agree", Override{}, agree, ReplicaSet{}, 300, SourceEnv, 1, "rate limit 300/s (environment)"},
		{"the daemons differ", Override{}, differ, ReplicaSet{}, 300, SourceEnv, 2,
			"rate limit 300/s on 2 replicas (a, c); no limit on 1 replica (b) (environment)"},
		{"a live replica without a report runs it unlimited", Override{}, reported, abc, 300, SourceEnv, 2,
			"rate limit 300/s on 2 replicas (a, c); no limit on 1 replica (b) (environment)"},
		{"run time overrides where they differ", Override{Rate: &rate}, differ, ReplicaSet{}, 50, SourceRunTime, 1, "rate limit 50/s (run time)"},
		{"run time elsewhere keeps the difference", Override{HoldAbove: &hold}, differ, ReplicaSet{}, 300, SourceRunTime, 2,
			"rate limit 300/s, holds while its hold queue has more than 10 ready on 2 replicas (a, c); holds while its hold queue has more than 10 ready on 1 replica (b) (run time)"},
		{"live daemons without reports run it unlimited, whatever this reader's environment", Override{}, nil, abc, 0, "", 1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := c.o.Shown(c.reports, c.live, here)
			if l.Rate != c.rate || l.Source != c.source || len(l.Groups) != c.groups || l.Text() != c.text {
				t.Errorf("Shown = %+v\nText %q\nwant rate %v from %q in %d groups, text %q", l, l.Text(), c.rate, c.source, c.groups, c.text)
			}
			if want := max(len(c.reports), len(c.live.Live)); len(l.Replicas) != want ||
				!slices.IsSortedFunc(l.Replicas, func(a, b ReplicaLimits) int { return strings.Compare(a.Replica, b.Replica) }) {
				t.Errorf("Replicas = %+v, want %d sorted by id", l.Replicas, want)
			}
		})
	}
}
