package forwarder

import (
	"context"
	"time"

	"github.com/delaybridge/delaybridge/flowstate"
)

// The limits this replica's environment gives each topic (Options.Flow)
// are known only here; envLoop reports them (flowstate.ReportEnv) so stats,
// replicas, topics and the console show what the daemons run with, and
// where replicas were started with different limits. Only a topic whose
// environment sets a limit is reported: a topic without one costs nothing,
// and readers count a live replica without a report as running the topic
// unlimited (every live replica serves every topic: ownership shares each
// topic's slots among all of them). A report lives HeartbeatTTL, so a
// replica that dies drops out of the limits when it drops out of the
// replica set. It is written at start, renewed every half of that (one
// small script per limited topic, every 2.5 s by default: the limits of an
// environment do not change while the process runs, so a renewal is the
// only write), and deleted at shutdown. A report that cannot be written
// (Redis down) is retried at the next renewal, never fatal.

// envLoop reports the limited topics' environment limits until ctx ends,
// then deletes this replica's reports.
func (f *Forwarder) envLoop(ctx context.Context) {
	var limited []*flowTopic
	for _, ft := range f.flows {
		if ft.envLimits().Source != "" {
			limited = append(limited, ft)
		}
	}
	if len(limited) == 0 {
		return
	}
	ttl := f.opt.HeartbeatTTL
	reported := make([]bool, len(limited))
	failed := false
	for {
		ok := true
		for i, ft := range limited {
			env := ft.envLimits()
			if f.reportEnv(ctx, ft, &env, ttl) {
				reported[i] = true
			} else {
				ok = false
			}
		}
		if !ok && !failed && ctx.Err() == nil {
			f.log.Warn("reporting the topics' limits failed; stats and the console may not show them until it succeeds")
		}
		failed = !ok
		if !sleep(ctx, ttl/2, nil) {
			break
		}
	}
	for i, ft := range limited {
		if reported[i] {
			f.reportEnv(context.WithoutCancel(ctx), ft, nil, ttl)
		}
	}
}

// reportEnv writes (env nil: deletes) this replica's report of ft's topic.
func (f *Forwarder) reportEnv(ctx context.Context, ft *flowTopic, env *flowstate.Limits, ttl time.Duration) bool {
	rctx, cancel := context.WithTimeout(ctx, redisTimeout)
	err := f.flowState.ReportEnv(rctx, ft.t.Topic, f.opt.ReplicaID, env, ttl)
	cancel()
	if err != nil && ctx.Err() == nil {
		f.m.RedisErrs.WithLabelValues("env").Inc()
		f.log.Debug("reporting the topic's limits failed", "topic", ft.t.Name, "err", err)
	}
	return err == nil
}

// envLimits are the limits this replica's environment gives ft's topic.
func (ft *flowTopic) envLimits() flowstate.Limits {
	return flowstate.EnvLimits(ft.env.RateLimit, ft.env.HoldQueue, ft.env.HoldAbove)
}
