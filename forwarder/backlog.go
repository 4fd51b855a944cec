package forwarder

import (
	"context"
	"time"
)

// backlogLoop refreshes the backlog gauges of the owned slots until ctx ends.
func (f *Forwarder) backlogLoop(ctx context.Context) {
	for {
		f.refreshBacklog(ctx)
		if !sleep(ctx, f.opt.BacklogInterval, nil) {
			return
		}
	}
}

// backlog is what the gauges of one topic show, summed over its owned slots.
type backlog struct {
	scheduled, overdue, retrying, inflight, dead int64
	// oldest is the age of the oldest overdue message (the max over the
	// slots), by Redis's clock: the stats call reads TIME with the scores.
	oldest time.Duration
}

func (f *Forwarder) refreshBacklog(ctx context.Context) {
	per := make([]backlog, len(f.opt.Topics))
	for _, k := range f.ownedSlots() {
		sctx, cancel := context.WithTimeout(ctx, redisTimeout)
		st, err := f.q.Stats(sctx, f.opt.Topics[k.topic].Topic, k.slot)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				f.m.RedisErrs.WithLabelValues("stats").Inc()
			}
			return // keep the last values rather than report a partial sum
		}
		p := &per[k.topic]
		p.scheduled += st.Scheduled
		p.overdue += st.Overdue
		p.retrying += st.Retrying
		p.inflight += st.Inflight
		p.dead += st.Dead
		if !st.OldestOverdue.IsZero() {
			p.oldest = max(p.oldest, st.Now.Sub(st.OldestOverdue))
		}
	}
	for i, t := range f.opt.Topics {
		g, b := f.m.Backlog, per[i]
		g.WithLabelValues(t.Name, "scheduled").Set(float64(b.scheduled))
		g.WithLabelValues(t.Name, "overdue").Set(float64(b.overdue))
		g.WithLabelValues(t.Name, "retrying").Set(float64(b.retrying))
		g.WithLabelValues(t.Name, "inflight").Set(float64(b.inflight))
		g.WithLabelValues(t.Name, "dead").Set(float64(b.dead))
		f.m.Overdue.WithLabelValues(t.Name).Set(b.oldest.Seconds())
	}
}
