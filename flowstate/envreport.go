package flowstate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// The limits a topic's environment gives it (DELAYBRIDGE_TOPIC_<NAME>_
// RATE_LIMIT, _HOLD_QUEUE, _HOLD_ABOVE) are known only to the daemons that
// were started with it, and replicas may have been started with different
// ones. Each daemon reports them for every topic it serves in the topic's
// env HASH (FlowKeys.Env), a replica report (reports.go) that lives as long
// as its heartbeat, so stats, replicas, topics and the console show what
// the daemons run with, not the environment of whoever reads. A topic
// whose environment sets no limit is not reported (it costs nothing): a
// live replica without a report runs it unlimited (Override.Shown). They are
// kept out of the topic registry (<prefix>:topics) on purpose: the
// registry holds the layout every replica must agree on, and a limit may
// differ between replicas without harm.

// ReplicaLimits are the limits one daemon's environment gives a topic, as
// it reports them (ReportEnv).
type ReplicaLimits struct {
	Replica string `json:"replica"`
	// Rate is deliveries per second over every replica (0: none).
	Rate float64 `json:"rate_limit"`
	// HoldQueue and HoldAbove: the topic holds while the queue has more
	// ready messages (HoldAbove -1: no hold).
	HoldQueue string `json:"hold_queue,omitempty"`
	HoldAbove int    `json:"hold_above"`
	// Until is when the report expires unless the daemon renews it
	// (Redis's clock).
	Until time.Time `json:"until"`
}

// env is r as the environment's Limits.
func (r ReplicaLimits) env() Limits { return EnvLimits(r.Rate, r.HoldQueue, r.HoldAbove) }

// ReportEnv records that replica runs t with env's limits (see EnvLimits),
// for ttl unless renewed; env nil deletes the replica's report.
func (s *Store) ReportEnv(ctx context.Context, t queue.Topic, replica string, env *Limits, ttl time.Duration) error {
	v := ""
	if env != nil {
		hold := env.HoldAbove
		if env.HoldQueue == "" {
			hold = -1
		}
		// The queue's name comes last: it may hold spaces.
		v = strconv.FormatFloat(max(0, env.Rate), 'f', -1, 64) + " " + strconv.Itoa(max(-1, hold)) + " " + env.HoldQueue
	}
	if err := s.report(ctx, t.FlowKeys().Env, replica, v, ttl); err != nil {
		return fmt.Errorf("report the limits %s runs %s with: %w", replica, t.Name, err)
	}
	return nil
}

// EnvOf returns, for every topic of ts, the limits that each live daemon
// whose environment limits it reports, sorted by replica id.
func (s *Store) EnvOf(ctx context.Context, ts []queue.Topic) ([][]ReplicaLimits, error) {
	out := make([][]ReplicaLimits, len(ts))
	for i, t := range ts {
		rs, err := s.reports(ctx, t.FlowKeys().Env)
		if err != nil {
			return nil, fmt.Errorf("read the limits the daemons run %s with: %w", t.Name, err)
		}
		for _, r := range rs {
			if l, ok := parseEnvReport(r); ok {
				out[i] = append(out[i], l)
			}
		}
		slices.SortFunc(out[i], func(a, b ReplicaLimits) int { return strings.Compare(a.Replica, b.Replica) })
	}
	return out, nil
}

// parseEnvReport reads one report, "<rate> <hold above> <hold queue>".
func parseEnvReport(r replicaReport) (ReplicaLimits, bool) {
	f := strings.SplitN(r.report, " ", 3)
	if len(f) != 3 {
		return ReplicaLimits{}, false
	}
	rate, err1 := strconv.ParseFloat(f[0], 64)
	hold, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || rate < 0 {
		return ReplicaLimits{}, false
	}
	if f[2] == "" {
		hold = -1
	}
	return ReplicaLimits{Replica: r.replica, Rate: rate, HoldQueue: f[2], HoldAbove: max(-1, hold), Until: r.until}, true
}

// LimitsShown are the limits in force of every topic of ts as stats,
// replicas, topics and the console show them (Override.Shown): the limits
// set at run time (LimitsOf) over those each live daemon of the replica set
// under prefix reports (EnvOf, queue.Replicas); here is the reader's own
// environment for a topic, standing in while no daemon is known.
func (s *Store) LimitsShown(ctx context.Context, prefix string, ts []queue.Topic, here func(queue.Topic) Limits) ([]Limits, error) {
	os, err := s.LimitsOf(ctx, ts)
	if err != nil {
		return nil, err
	}
	envs, err := s.EnvOf(ctx, ts)
	if err != nil {
		return nil, err
	}
	live, err := membership.New(s.q).Replicas(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]Limits, len(ts))
	for i, t := range ts {
		out[i] = os[i].Shown(envs[i], live, here(t))
	}
	return out, nil
}
