package forwarder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/delaybridge/delaybridge/flowstate"
)

// Whether a topic is held by its flow control is known only here, in the
// scanners that wait (budget.go). heldReporter tells stats and the console: every
// heldInterval it reports each topic that one of this replica's scanners
// held since the last report (flowstate.ReportHeld: why, and the hold queue's
// depth last read), renewing the report while the topic stays held and
// deleting it once when it no longer is. A report lives three intervals, so one of
// a replica that died expires by itself. A replica whose topics are not
// held writes nothing.

// heldInterval is how often a replica reports; a report lives three times
// that.
const heldInterval = time.Second

// Bits of flowTopic.heldSeen.
const (
	heldSeenRate uint32 = 1 << iota
	heldSeenQueue
)

// heldReporter reports which topics this replica's scanners held.
type heldReporter struct {
	q        *flowstate.Store
	m        *Metrics
	log      *slog.Logger
	replica  string
	every    time.Duration
	ttl      time.Duration
	flows    []*flowTopic
	reported []bool // flows[i]'s topic has a report in Redis
	passed   passes // tests: signalled after each pass
}

// heldReporterConfig configures a heldReporter.
type heldReporterConfig struct {
	Replica string
	// Every is how often it reports (default heldInterval); a report
	// lives three times that.
	Every time.Duration
	Flows []*flowTopic
}

func newHeldReporter(cfg heldReporterConfig, q *flowstate.Store, m *Metrics, log *slog.Logger) (*heldReporter, error) {
	if cfg.Replica == "" {
		return nil, errors.New("held reporter: no replica id")
	}
	every := cmp.Or(cfg.Every, heldInterval)
	if every <= 0 {
		return nil, fmt.Errorf("held reporter: interval %s: want a positive duration", every)
	}
	return &heldReporter{q: q, m: m, log: log, replica: cfg.Replica, every: every, ttl: 3 * every,
		flows: cfg.Flows, reported: make([]bool, len(cfg.Flows))}, nil
}

// run reports the held topics every interval until ctx ends, then deletes
// this replica's reports.
func (r *heldReporter) run(ctx context.Context) {
	for sleep(ctx, r.every, nil) {
		r.runOnce(ctx)
	}
	for i, ft := range r.flows {
		if r.reported[i] {
			r.report(context.WithoutCancel(ctx), ft, nil)
		}
	}
}

// runOnce reports each topic held since the last pass, and deletes the
// report of each that was and is no longer.
func (r *heldReporter) runOnce(ctx context.Context) pass {
	defer r.passed.signal()
	var p pass
	for i, ft := range r.flows {
		h := ft.heldNow()
		if h == nil && !r.reported[i] {
			continue
		}
		if !r.report(ctx, ft, h) {
			p.err = errors.Join(p.err, fmt.Errorf("held state of %s not written", ft.t.Name))
			continue
		}
		r.reported[i] = h != nil
		p.done++
	}
	return p
}

// report writes (h nil: deletes) this replica's report of ft's topic.
func (r *heldReporter) report(ctx context.Context, ft *flowTopic, h *flowstate.Held) bool {
	rctx, cancel := context.WithTimeout(ctx, redisTimeout)
	err := r.q.ReportHeld(rctx, ft.t.Topic, r.replica, h, r.ttl)
	cancel()
	if err != nil && ctx.Err() == nil {
		r.m.RedisErrs.WithLabelValues("held").Inc()
		r.log.Debug("reporting whether the topic is held failed", "topic", ft.t.Name, "err", err)
	}
	return err == nil
}

// heldNow is what this replica reports of ft's topic: why its scanners
// were held since the last report, and the hold queue's depth last read
// (-1 when not read or the read failed); nil when none was held.
func (ft *flowTopic) heldNow() *flowstate.Held {
	seen := ft.heldSeen.Swap(0)
	var h flowstate.Held
	if ft.heldRate.Load() > 0 || seen&heldSeenRate != 0 {
		h.Reasons = append(h.Reasons, heldRate)
	}
	if ft.heldQueue.Load() > 0 || seen&heldSeenQueue != 0 {
		h.Reasons = append(h.Reasons, heldQueue)
	}
	if len(h.Reasons) == 0 {
		return nil
	}
	h.Depth = -1
	if ft.hold.Load() >= 0 {
		ft.mu.Lock()
		if !ft.reading.at.IsZero() && ft.reading.err == nil {
			h.Depth = ft.reading.depth
		}
		ft.mu.Unlock()
	}
	return &h
}
