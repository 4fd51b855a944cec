package flowstate

import (
	"slices"
	"strings"

	"github.com/delaybridge/delaybridge/membership"
)

// Limits are a topic's flow control in force, as stats, the console and
// the registry show it.
type Limits struct {
	// Rate is deliveries per second over every replica (0: none).
	Rate float64 `json:"rate_limit"`
	// HoldQueue and HoldAbove: the topic holds while the queue has more
	// ready messages (HoldAbove -1: no hold).
	HoldQueue string `json:"hold_queue,omitempty"`
	HoldAbove int    `json:"hold_above"`
	// Source is SourceEnv, SourceRunTime, SourceHere, or "" when the topic
	// has no limit.
	Source string `json:"source,omitempty"`
	// Replicas are the limits each live daemon's environment gives the
	// topic, sorted by replica id: its report (ReportEnv), or none (rate 0,
	// hold-above -1) for a live replica that reports nothing. Empty when no
	// daemon is known (Source is then SourceHere, SourceRunTime or "").
	Replicas []ReplicaLimits `json:"replicas,omitempty"`
	// Groups are the limits in force on those replicas: one entry per
	// distinct limits, with the replicas that run the topic with them, most
	// replicas first. More than one when the replicas' environments differ
	// where no run-time limit overrides them; the fields above are then
	// those of the first.
	Groups []LimitsGroup `json:"groups,omitempty"`
}

// Where limits in force come from (Limits.Source).
const (
	// SourceEnv: the environment the daemons were started with, as they
	// report it.
	SourceEnv = "environment"
	// SourceRunTime: set at run time (delaybridge limit, the console),
	// over the environment's.
	SourceRunTime = "run time"
	// SourceHere: no live daemon reports the topic's limits; the reader's
	// own environment (the shell that runs stats, the console's) stands in.
	SourceHere = "here"
)

// LimitsGroup are limits in force and the replicas that run a topic with
// them (Limits.Groups).
type LimitsGroup struct {
	Rate      float64  `json:"rate_limit"`
	HoldQueue string   `json:"hold_queue,omitempty"`
	HoldAbove int      `json:"hold_above"`
	Source    string   `json:"source,omitempty"`
	Replicas  []string `json:"replicas"`
}

func (g LimitsGroup) limits() Limits {
	return Limits{Rate: g.Rate, HoldQueue: g.HoldQueue, HoldAbove: g.HoldAbove, Source: g.Source}
}

// Shown returns the limits in force as stats, replicas, topics and the
// console show them: each live daemon's environment overridden by o,
// grouped by the limits that result. A daemon's environment is its report
// (reports, see EnvOf), or none for a replica of live (the replica set,
// see membership.Store.Replicas) that reports nothing: a daemon reports only the
// topics its environment limits. While no daemon is known (no report, no live
// replica), here (the reader's own environment, EnvLimits) overridden by o
// stands in, with Source SourceHere where here's limits are shown.
func (o Override) Shown(reports []ReplicaLimits, live membership.ReplicaSet, here Limits) Limits {
	reports = slices.Clone(reports)
	for _, id := range live.Live {
		if !slices.ContainsFunc(reports, func(r ReplicaLimits) bool { return r.Replica == id }) {
			reports = append(reports, ReplicaLimits{Replica: id, HoldAbove: -1, Until: live.Deadlines[id]})
		}
	}
	if len(reports) == 0 {
		l := o.InForce(here)
		if l.Source == SourceEnv {
			l.Source = SourceHere
		}
		return l
	}
	slices.SortFunc(reports, func(a, b ReplicaLimits) int { return strings.Compare(a.Replica, b.Replica) })
	var groups []LimitsGroup
	for _, r := range reports {
		in := o.InForce(r.env())
		i := slices.IndexFunc(groups, func(g LimitsGroup) bool {
			return g.Rate == in.Rate && g.HoldQueue == in.HoldQueue && g.HoldAbove == in.HoldAbove && g.Source == in.Source
		})
		if i < 0 {
			groups = append(groups, LimitsGroup{Rate: in.Rate, HoldQueue: in.HoldQueue, HoldAbove: in.HoldAbove, Source: in.Source})
			i = len(groups) - 1
		}
		groups[i].Replicas = append(groups[i].Replicas, r.Replica)
	}
	slices.SortStableFunc(groups, func(a, b LimitsGroup) int { return len(b.Replicas) - len(a.Replicas) })
	l := groups[0].limits()
	l.Replicas, l.Groups = reports, groups
	return l
}

// Differ reports whether replicas run the topic with different limits.
func (l Limits) Differ() bool { return len(l.Groups) > 1 }

// EnvLimits are the limits of a topic's environment: rate (0: none), and
// holdAbove when holdQueue is set.
func EnvLimits(rate float64, holdQueue string, holdAbove int) Limits {
	l := Limits{Rate: rate, HoldQueue: holdQueue, HoldAbove: -1}
	if holdQueue != "" {
		l.HoldAbove = holdAbove
	}
	if l.Rate > 0 || l.HoldAbove >= 0 {
		l.Source = SourceEnv
	}
	return l
}

// InForce returns the limits in force: env's (see EnvLimits), overridden
// by o's fields that are set.
func (o Override) InForce(env Limits) Limits {
	if o.IsZero() {
		return env
	}
	env.Rate, env.HoldAbove = o.Effective(env.Rate, env.HoldAbove)
	env.Source = SourceRunTime
	return env
}

// MinRate is the lowest rate limit accepted, in deliveries per second (one
// every 1,000 s, about 17 minutes). A lower one stops a topic in all but
// name, and its waits leave the range the limiter computes in: at 1e-11 a
// wait overflowed into a 1 ms loop, at 1e-9 a slot slept for 31 years. Use
// a pause to stop a topic.
const MinRate = 0.001
