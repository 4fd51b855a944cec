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
	// paused: an owned slot is paused (pause sets every slot of a topic).
	paused, sampled bool
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
		p.paused = p.paused || st.Pause.Paused
		p.sampled = true
		if !st.OldestOverdue.IsZero() {
			p.oldest = max(p.oldest, st.Now.Sub(st.OldestOverdue))
		}
	}
	if !f.probePaused(ctx, per) {
		return
	}
	for i, t := range f.opt.Topics {
		g, b := f.m.Backlog, per[i]
		g.WithLabelValues(t.Name, "scheduled").Set(float64(b.scheduled))
		g.WithLabelValues(t.Name, "overdue").Set(float64(b.overdue))
		g.WithLabelValues(t.Name, "retrying").Set(float64(b.retrying))
		g.WithLabelValues(t.Name, "inflight").Set(float64(b.inflight))
		g.WithLabelValues(t.Name, "dead").Set(float64(b.dead))
		f.m.Overdue.WithLabelValues(t.Name).Set(b.oldest.Seconds())
		paused := 0.0
		if b.paused {
			paused = 1
		}
		f.m.Paused.WithLabelValues(t.Name).Set(paused)
	}
}

// probePaused reads slot 0 of every topic this replica owns no slot of, so
// topic_paused is right on every replica, not only on the slots' owners
// (a max over replicas then never hides a pause). False on an error.
func (f *Forwarder) probePaused(ctx context.Context, per []backlog) bool {
	for i, t := range f.opt.Topics {
		if per[i].sampled {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, redisTimeout)
		st, err := f.q.Stats(sctx, t.Topic, 0)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				f.m.RedisErrs.WithLabelValues("stats").Inc()
			}
			return false
		}
		per[i].paused = st.Pause.Paused
	}
	return true
}
