package forwarder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/queue"
)

// The limits this replica's environment gives each topic (Options.Flow)
// are known only here; envReporter reports them (flowstate.ReportEnv) so stats,
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

// envReporter reports the limited topics' environment limits.
type envReporter struct {
	q       *flowstate.Store
	m       *Metrics
	log     *slog.Logger
	replica string
	ttl     time.Duration
	topics  []envTopic
	// reported: topics[i]'s report was written at least once.
	reported []bool
	passed   passes // tests: signalled after each pass
}

// envTopic is one limited topic and the limits its environment gives it.
type envTopic struct {
	topic  queue.Topic
	limits flowstate.Limits
}

// envReporterConfig configures an envReporter.
type envReporterConfig struct {
	Replica string
	// TTL is how long a report lives (default: Defaults()'s HeartbeatTTL); it is renewed every
	// half of it.
	TTL time.Duration
	// Topics are every topic with its environment's flow control; only
	// those with a limit are reported.
	Topics []Topic
	Flow   map[string]Flow
}

func newEnvReporter(cfg envReporterConfig, q *flowstate.Store, m *Metrics, log *slog.Logger) (*envReporter, error) {
	if cfg.Replica == "" {
		return nil, errors.New("env reporter: no replica id")
	}
	r := &envReporter{q: q, m: m, log: log, replica: cfg.Replica, ttl: cmp.Or(cfg.TTL, Defaults().HeartbeatTTL)}
	if r.ttl <= 0 {
		return nil, fmt.Errorf("env reporter: ttl %s: want a positive duration", r.ttl)
	}
	for _, t := range cfg.Topics {
		env := cfg.Flow[t.Name]
		l := flowstate.EnvLimits(env.RateLimit, env.HoldQueue, env.HoldAbove)
		if l.Source != "" {
			r.topics = append(r.topics, envTopic{topic: t.Topic, limits: l})
		}
	}
	r.reported = make([]bool, len(r.topics))
	return r, nil
}

// run reports until ctx ends, then deletes this replica's reports.
func (r *envReporter) run(ctx context.Context) {
	if len(r.topics) == 0 {
		return
	}
	failed := false
	for {
		err := r.runOnce(ctx).err
		if err != nil && !failed && ctx.Err() == nil {
			r.log.Warn("reporting the topics' limits failed; stats and the console may not show them until it succeeds", "err", err)
		}
		failed = err != nil
		if !sleep(ctx, r.ttl/2, nil) {
			break
		}
	}
	for i, t := range r.topics {
		if r.reported[i] {
			r.report(context.WithoutCancel(ctx), t.topic, nil)
		}
	}
}

// runOnce writes every limited topic's report once.
func (r *envReporter) runOnce(ctx context.Context) pass {
	defer r.passed.signal()
	var errs []error
	done := 0
	for i, t := range r.topics {
		if err := r.report(ctx, t.topic, &t.limits); err != nil {
			errs = append(errs, err)
			continue
		}
		r.reported[i] = true
		done++
	}
	return pass{done: done, err: errors.Join(errs...)}
}

// report writes (env nil: deletes) this replica's report of topic.
func (r *envReporter) report(ctx context.Context, topic queue.Topic, env *flowstate.Limits) error {
	rctx, cancel := context.WithTimeout(ctx, redisTimeout)
	err := r.q.ReportEnv(rctx, topic, r.replica, env, r.ttl)
	cancel()
	if err != nil && ctx.Err() == nil {
		r.m.RedisErrs.WithLabelValues("env").Inc()
		r.log.Debug("reporting the topic's limits failed", "topic", topic.Name, "err", err)
	}
	if err != nil {
		return fmt.Errorf("report %s's limits: %w", topic.Name, err)
	}
	return nil
}
