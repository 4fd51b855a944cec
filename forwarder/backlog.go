package forwarder

import "context"

// backlogLoop refreshes the backlog gauges of the owned slots until ctx ends.
func (f *Forwarder) backlogLoop(ctx context.Context) {
	for {
		f.refreshBacklog(ctx)
		if !sleep(ctx, f.opt.BacklogInterval, nil) {
			return
		}
	}
}

func (f *Forwarder) refreshBacklog(ctx context.Context) {
	type sums struct{ scheduled, overdue, inflight, dead int64 }
	per := make([]sums, len(f.opt.Topics))
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
		p.inflight += st.Inflight
		p.dead += st.Dead
	}
	for i, t := range f.opt.Topics {
		g := f.m.Backlog
		g.WithLabelValues(t.Name, "scheduled").Set(float64(per[i].scheduled))
		g.WithLabelValues(t.Name, "overdue").Set(float64(per[i].overdue))
		g.WithLabelValues(t.Name, "inflight").Set(float64(per[i].inflight))
		g.WithLabelValues(t.Name, "dead").Set(float64(per[i].dead))
	}
}
