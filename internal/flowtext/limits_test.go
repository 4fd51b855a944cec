package flowtext

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/membership"
)

func TestShownLimitsAreTheDaemonsReportsGroupedWithTheRunTimeOnesWinning(t *testing.T) {
	rate, hold := 50.0, 10
	here := flowstate.EnvLimits(7, "", 0)
	r := func(id string, rate float64, q string, above int) flowstate.ReplicaLimits {
		return flowstate.ReplicaLimits{Replica: id, Rate: rate, HoldQueue: q, HoldAbove: above}
	}
	agree := []flowstate.ReplicaLimits{r("a", 300, "", -1), r("b", 300, "", -1)}
	differ := []flowstate.ReplicaLimits{r("a", 300, "", -1), r("b", 0, "", -1), r("c", 300, "", -1)}
	// b reports nothing: a daemon reports only the topics its environment
	// limits; live, it runs the topic unlimited.
	reported := []flowstate.ReplicaLimits{r("c", 300, "", -1), r("a", 300, "", -1)}
	abc := membership.ReplicaSet{Live: []string{"a", "b", "c"}, Deadlines: map[string]time.Time{"b": time.Now()}}
	for _, c := range []struct {
		name    string
		o       flowstate.Override
		reports []flowstate.ReplicaLimits
		live    membership.ReplicaSet
		rate    float64
		source  string
		groups  int
		text    string
	}{
		{"no daemon known: this reader's environment", flowstate.Override{}, nil, membership.ReplicaSet{}, 7, flowstate.SourceHere, 0,
			"rate limit 7/s (environment here: no live daemon reports its own)"},
		{"no daemon known, run time", flowstate.Override{Rate: &rate}, nil, membership.ReplicaSet{}, 50, flowstate.SourceRunTime, 0, "rate limit 50/s (run time)"},
		{"the daemons agree", flowstate.Override{}, agree, membership.ReplicaSet{}, 300, flowstate.SourceEnv, 1, "rate limit 300/s (environment)"},
		{"the daemons differ", flowstate.Override{}, differ, membership.ReplicaSet{}, 300, flowstate.SourceEnv, 2,
			"rate limit 300/s on 2 replicas (a, c); no limit on 1 replica (b) (environment)"},
		{"a live replica without a report runs it unlimited", flowstate.Override{}, reported, abc, 300, flowstate.SourceEnv, 2,
			"rate limit 300/s on 2 replicas (a, c); no limit on 1 replica (b) (environment)"},
		{"run time overrides where they differ", flowstate.Override{Rate: &rate}, differ, membership.ReplicaSet{}, 50, flowstate.SourceRunTime, 1, "rate limit 50/s (run time)"},
		{"run time elsewhere keeps the difference", flowstate.Override{HoldAbove: &hold}, differ, membership.ReplicaSet{}, 300, flowstate.SourceRunTime, 2,
			"rate limit 300/s, holds while its hold queue has more than 10 ready on 2 replicas (a, c); holds while its hold queue has more than 10 ready on 1 replica (b) (run time)"},
		{"live daemons without reports run it unlimited, whatever this reader's environment", flowstate.Override{}, nil, abc, 0, "", 1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := c.o.Shown(c.reports, c.live, here)
			if l.Rate != c.rate || l.Source != c.source || len(l.Groups) != c.groups || Limits(l) != c.text {
				t.Errorf("Shown = %+v\nText %q\nwant rate %v from %q in %d groups, text %q", l, Limits(l), c.rate, c.source, c.groups, c.text)
			}
			if want := max(len(c.reports), len(c.live.Live)); len(l.Replicas) != want ||
				!slices.IsSortedFunc(l.Replicas, func(a, b flowstate.ReplicaLimits) int { return strings.Compare(a.Replica, b.Replica) }) {
				t.Errorf("Replicas = %+v, want %d sorted by id", l.Replicas, want)
			}
		})
	}
}
