package forwarder

import (
	"context"
	"time"
)

// pausedEvery is how often topic_paused is read again: the backlog loop
// sets it too, but only every BacklogInterval (10 s), and the gauge read 0
// for up to that long after `delaybridge pause`. One EXISTS per topic per
// second keeps it within a second of the command.
const pausedEvery = time.Second

// pausedLoop refreshes topic_paused every pausedEvery until ctx ends.
func (f *Forwarder) pausedLoop(ctx context.Context) {
	for {
		for _, t := range f.opt.Topics {
			rctx, cancel := context.WithTimeout(ctx, redisTimeout)
			p, err := f.q.IsPaused(rctx, t.Topic)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					f.m.RedisErrs.WithLabelValues("stats").Inc()
				}
				break
			}
			v := 0.0
			if p {
				v = 1
			}
			f.m.Paused.WithLabelValues(t.Name).Set(v)
		}
		if !sleep(ctx, pausedEvery, nil) {
			return
		}
	}
}
