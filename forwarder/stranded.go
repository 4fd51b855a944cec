package forwarder

import (
	"context"
	"time"
)

// DefaultStrandedInterval is how often, by default, every topic's keys are
// searched for slots beyond its slot count (Options.StrandedInterval). The
// search walks the keyspace (SCAN), so it is not cheap; stranded messages
// only appear when a topic is resized or a producer is misconfigured, and
// the daemon searches once at start.
const DefaultStrandedInterval = 2 * time.Minute

// strandedTimeout bounds one topic's search: a SCAN of a large keyspace
// takes many round trips.
const strandedTimeout = time.Minute

// strandedCountEvery is how often the messages of the stranded slots found
// are counted again between two searches (ZCARDs, no SCAN), so the gauge
// follows their drain: a drained slot reads 0 within seconds, not at the
// next search, and an alert on it stops.
const strandedCountEvery = time.Second

// strandedLoop searches for stranded slots at start and every
// StrandedInterval, until ctx ends, and counts the messages of those found
// every strandedCountEvery meanwhile. A stranded slot joins the slots that
// ownership shares out (see wanted), so its messages are claimed, published,
// retried and reaped like any other, under the same ownership and leases;
// it leaves them at the first search that finds it empty.
func (f *Forwarder) strandedLoop(ctx context.Context) {
	next := time.Now()
	for {
		if time.Now().Before(next) {
			f.countStranded(ctx)
		} else {
			f.findStranded(ctx)
			next = time.Now().Add(f.opt.StrandedInterval)
		}
		wait := time.Until(next)
		if f.hasStranded() {
			wait = min(wait, strandedCountEvery)
		}
		if !sleep(ctx, wait, nil) {
			return
		}
	}
}

// hasStranded reports whether the last search found stranded slots.
func (f *Forwarder) hasStranded() bool {
	f.assignMu.Lock()
	defer f.assignMu.Unlock()
	return len(f.stranded) > 0
}

// countStranded sets the gauge of each topic with stranded slots to the
// messages they hold now. A count that fails keeps the last value; the
// next search tries again.
func (f *Forwarder) countStranded(ctx context.Context) {
	f.assignMu.Lock()
	per := map[int][]int{}
	for k := range f.stranded {
		per[k.topic] = append(per[k.topic], k.slot)
	}
	f.assignMu.Unlock()
	for ti, slots := range per {
		t := f.opt.Topics[ti]
		sctx, cancel := context.WithTimeout(ctx, redisTimeout)
		left, err := f.q.CountStranded(sctx, t.Topic, slots)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				f.m.RedisErrs.WithLabelValues("stranded").Inc()
			}
			continue
		}
		var count int64
		for _, s := range left {
			count += s.Messages
		}
		f.m.Stranded.WithLabelValues(t.Name).Set(float64(count))
	}
}

// findStranded searches every slotted topic, updates the gauge, logs what it
// found and hands the stranded slots to ownership. A topic whose search
// failed keeps the slots found before.
func (f *Forwarder) findStranded(ctx context.Context) {
	f.assignMu.Lock()
	found := make(map[slotKey]bool, len(f.stranded))
	for k := range f.stranded {
		found[k] = true
	}
	f.assignMu.Unlock()
	for ti, t := range f.opt.Topics {
		if t.Key != "" {
			continue // an adopted key has one slot and no others
		}
		sctx, cancel := context.WithTimeout(ctx, strandedTimeout)
		slots, err := f.q.StrandedSlots(sctx, t.Topic)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			f.m.RedisErrs.WithLabelValues("stranded").Inc()
			f.log.Warn("search for stranded slots failed", "topic", t.Name, "err", err)
			continue
		}
		had := 0
		for k := range found {
			if k.topic == ti {
				delete(found, k)
				had++
			}
		}
		var count int64
		nums := make([]int, len(slots))
		for i, s := range slots {
			found[slotKey{ti, s.Slot}] = true
			count += s.Messages
			nums[i] = s.Slot
		}
		f.m.Stranded.WithLabelValues(t.Name).Set(float64(count))
		switch {
		case len(slots) > 0:
			f.log.Warn("messages in slots beyond the topic's slot count (resized, or a producer with other settings); draining them",
				"topic", t.Name, "slot_count", t.SlotCount(), "stranded_slots", nums, "count", count)
		case had > 0:
			f.log.Info("stranded slots drained", "topic", t.Name, "stranded_slots", had)
		}
	}
	f.assignMu.Lock()
	f.stranded = found
	f.assignMu.Unlock()
	if gained, lost, owned := f.reassign(ctx); gained+lost > 0 {
		f.log.Info("ownership changed: stranded slots", "owned", owned, "gained", gained, "lost", lost)
	}
}
