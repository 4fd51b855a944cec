package forwarder

import (
	"context"
	"time"
)

// pausedEvery is how often topic_paused is read again while Redis sends no
// hash notifications: the backlog loop sets it too, but only every
// BacklogInterval (10 s), and the gauge read 0 for up to that long after
// `delaybridge pause`. One EXISTS per topic per second keeps it within a
// second of the command. With keyspace notifications of every kind
// (modeAll) the pause key's own event reads it at once, and an idle topic
// costs nothing: the loop then reads again only at the keyspace safety
// poll (KeyspacePollInterval).
const pausedEvery = time.Second

// pausedChanged is the keyspace watcher's word that topic's pause key
// changed: pausedLoop reads it at once.
func (f *Forwarder) pausedChanged(topic int) {
	select {
	case f.pausedWake <- topic:
	default: // a read of every topic is queued already
	}
}

// pausedLoop refreshes topic_paused until ctx ends: every topic each
// pausedEvery (the keyspace safety poll while notifications say when a
// pause changes), one topic when its pause key changed.
func (f *Forwarder) pausedLoop(ctx context.Context) {
	all := make([]int, len(f.opt.Topics))
	for i := range all {
		all[i] = i
	}
	read := all
	for {
		f.refreshPaused(ctx, read)
		every := pausedEvery
		if f.ks.get() == modeAll {
			every = f.opt.KeyspacePollInterval
		}
		timer := time.NewTimer(every)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case ti := <-f.pausedWake:
			read = []int{ti}
		case <-timer.C:
			read = all
		}
		timer.Stop()
	}
}

// refreshPaused reads the pause of the topics at the indexes ts.
func (f *Forwarder) refreshPaused(ctx context.Context, ts []int) {
	for _, ti := range ts {
		t := f.opt.Topics[ti]
		rctx, cancel := context.WithTimeout(ctx, redisTimeout)
		p, err := f.q.IsPaused(rctx, t.Topic)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				f.m.RedisErrs.WithLabelValues("stats").Inc()
			}
			return
		}
		v := 0.0
		if p {
			v = 1
		}
		f.m.Paused.WithLabelValues(t.Name).Set(v)
	}
}
