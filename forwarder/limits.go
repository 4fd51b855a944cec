package forwarder

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/queue"
)

// limitsInterval is how often each replica reads the run-time limits: a
// change reaches every replica within it (the promise is 1 s).
const limitsInterval = 500 * time.Millisecond

// limitsReader reads every topic's run-time limits (flowstate.SetLimits) and
// puts them in force (flowTopic.apply). A failed read keeps the limits in
// force.
type limitsReader struct {
	q      *flowstate.Store
	m      *Metrics
	log    *slog.Logger
	topics []queue.Topic
	flows  []*flowTopic // flows[i] is topics[i]'s
	every  time.Duration
	failed bool         // the last read failed (logged once per outage)
	health *redisHealth // the replica's; nil: a failure logs its own line
	passed passes       // tests: signalled after each pass
}

// limitsConfig configures a limitsReader.
type limitsConfig struct {
	Topics []Topic
	Flows  []*flowTopic
	// Every is how often the limits are read (default limitsInterval).
	Every time.Duration
}

func newLimitsReader(cfg limitsConfig, q *flowstate.Store, m *Metrics, log *slog.Logger) (*limitsReader, error) {
	every := cmp.Or(cfg.Every, limitsInterval)
	if every <= 0 || len(cfg.Flows) != len(cfg.Topics) {
		return nil, fmt.Errorf("limits reader: interval %s, %d flows for %d topics: want a positive interval and a flow per topic",
			every, len(cfg.Flows), len(cfg.Topics))
	}
	return &limitsReader{q: q, m: m, log: log, topics: topicsOf(cfg.Topics), flows: cfg.Flows, every: every}, nil
}

// run reads the limits at start and every interval until ctx ends.
func (l *limitsReader) run(ctx context.Context) {
	for {
		l.runOnce(ctx)
		if !sleep(ctx, l.every, nil) {
			return
		}
	}
}

// runOnce reads the run-time limits once and puts them in force.
func (l *limitsReader) runOnce(ctx context.Context) pass {
	defer l.passed.signal()
	rctx, cancel := context.WithTimeout(ctx, redisTimeout)
	os, err := l.q.LimitsOf(rctx, l.topics)
	cancel()
	switch {
	case err != nil && ctx.Err() == nil:
		l.m.RedisErrs.WithLabelValues("limits").Inc()
		if l.health != nil {
			// Redis not answering is the outage's one line (redisdown.go).
			l.health.failed("", "reading the run-time limits failed; the limits in force stay", err)
		} else if !l.failed {
			l.log.Warn("reading the run-time limits failed; the limits in force stay", "err", err)
		}
		l.failed = true
	case err == nil:
		l.failed = false
		for i, o := range os {
			l.flows[i].apply(o)
		}
		return pass{done: len(os)}
	}
	return pass{err: err}
}
