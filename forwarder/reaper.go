package forwarder

import (
	"context"
	"math"
	"time"
)

// reapLimit is the most expired leases returned per call.
const reapLimit = 1000

// reapLoop returns the expired leases of the owned slots, a few times per
// lease, until ctx ends.
func (f *Forwarder) reapLoop(ctx context.Context) {
	interval := min(max(f.opt.Lease/4, 50*time.Millisecond), 5*time.Second)
	cursors := map[slotKey]string{}
	for sleep(ctx, interval, nil) {
		for _, k := range f.ownedSlots() {
			if ctx.Err() != nil {
				return
			}
			cursors[k] = f.reap(ctx, k, cursors[k])
		}
	}
}

// reap returns expired leases of one slot and advances its sweep; it returns
// the next sweep cursor.
func (f *Forwarder) reap(ctx context.Context, k slotKey, cursor string) string {
	t := f.opt.Topics[k.topic]
	for {
		rctx, cancel := context.WithTimeout(ctx, redisTimeout)
		r, err := f.q.Reap(rctx, t.Topic, k.slot, reapLimit, cursor)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				f.m.RedisErrs.WithLabelValues("reap").Inc()
				f.log.Warn("reap failed", "topic", t.Name, "slot", k.slot, "err", err)
			}
			return cursor
		}
		cursor = r.Cursor
		if r.Reaped > 0 {
			f.m.Reaped.WithLabelValues(t.Name).Add(float64(r.Reaped))
			f.log.Warn("returned expired leases", "topic", t.Name, "slot", k.slot, "count", r.Reaped)
			f.wakes.wake(k, math.Inf(-1)) // due now
		}
		if r.Dead > 0 {
			f.m.Dead.WithLabelValues(t.Name).Add(float64(r.Dead))
			f.log.Warn("dead-lettered messages that can never fall due", "topic", t.Name, "slot", k.slot, "count", r.Dead)
		}
		if r.Reaped < reapLimit {
			return cursor
		}
	}
}
