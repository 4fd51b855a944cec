package forwarder

import (
	"context"
	"math"
	"sync"
	"time"
)

// reapLimit is the most expired leases returned per call.
const reapLimit = 1000

// The reaper reaps a slot when this replica acquires it (the replica that
// owned it may have died holding leases), then when a lease of the slot
// could have expired: the reap script returns the earliest lease deadline
// left in flight, and a claim (this replica's, or in keyspace mode any
// replica's, seen as a notification) adds one a lease from now. Besides,
// every slot is reaped at least every reapSafety(): a replica that claimed in
// a slot after this one acquired it (both scan it for a moment) and then
// died is noticed without notifications only that way; and the reap also
// sweeps stale records (see queue.Reap).
const (
	// reapSafetyKeyspace is the safety interval with keyspace
	// notifications, where other replicas' claims are seen.
	reapSafetyKeyspace = 10 * time.Minute
	// reapPace is the wait before a slot whose reap left work (more expired
	// leases, or a sweep half done) is reaped again.
	reapPace = 5 * time.Second
)

// reapSafety is the longest a slot goes unreaped: with notifications
// reapSafetyKeyspace; without, the lease (from 5 s to 5 min), as a dead
// claimer's leases may only be found by looking.
func (f *Forwarder) reapSafety() time.Duration {
	if f.ks.get() != modePoll {
		return reapSafetyKeyspace
	}
	return min(max(f.opt.Lease, 5*time.Second), 5*time.Minute)
}

// reapGrace is how long after a lease's deadline the reaper looks: a live
// claimer renews its slow batches' leases a third of a lease ahead, but on a
// loaded machine a renewal may come late, and reaping at the very deadline
// would publish such a batch twice. An eighth of the lease (at most 1 s) is
// what the reaper's old fixed pace (a quarter of the lease) gave on average.
func (f *Forwarder) reapGrace() time.Duration {
	return min(max(f.opt.Lease/8, 2*time.Millisecond), time.Second)
}

// reapSchedule is when each owned slot is reaped next.
type reapSchedule struct {
	mu   sync.Mutex
	next map[slotKey]time.Time
	kick chan struct{} // a slot's time moved earlier
}

func newReapSchedule() *reapSchedule {
	return &reapSchedule{next: map[slotKey]time.Time{}, kick: make(chan struct{}, 1)}
}

// acquire schedules a newly owned slot's first reap now.
func (r *reapSchedule) acquire(k slotKey) {
	r.mu.Lock()
	r.next[k] = time.Time{}
	r.mu.Unlock()
	r.poke()
}

// drop forgets a slot no longer owned.
func (r *reapSchedule) drop(k slotKey) {
	r.mu.Lock()
	delete(r.next, k)
	r.mu.Unlock()
}

// note moves an owned slot's next reap to at, if that is earlier.
func (r *reapSchedule) note(k slotKey, at time.Time) {
	r.mu.Lock()
	t, owned := r.next[k]
	earlier := owned && at.Before(t)
	if earlier {
		r.next[k] = at
	}
	r.mu.Unlock()
	if earlier {
		r.poke()
	}
}

// all schedules every owned slot now.
func (r *reapSchedule) all() {
	r.mu.Lock()
	for k := range r.next {
		r.next[k] = time.Time{}
	}
	r.mu.Unlock()
	r.poke()
}

func (r *reapSchedule) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// due takes the slots whose time has come, moving each to the far future
// (its reap schedules the next), and returns when the next one is due, at
// the latest by limit.
func (r *reapSchedule) due(now, limit time.Time) ([]slotKey, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []slotKey
	first := limit
	for k, t := range r.next {
		if !t.After(now) {
			ks = append(ks, k)
			r.next[k] = never
			continue
		}
		if t.Before(first) {
			first = t
		}
	}
	return ks, first
}

// never is a time no reap is scheduled for.
var never = time.Unix(1<<62, 0)

// reapLoop reaps the owned slots when they are due (see reapSchedule), until
// ctx ends.
func (f *Forwarder) reapLoop(ctx context.Context) {
	cursors := map[slotKey]string{}
	for {
		now := time.Now()
		ks, first := f.reaps.due(now, now.Add(time.Minute))
		for _, k := range ks {
			if ctx.Err() != nil {
				return
			}
			cursors[k] = f.reap(ctx, k, cursors[k])
		}
		if len(ks) > 0 {
			continue // the reaps took time: look at the schedule again
		}
		if !sleep(ctx, time.Until(first), f.reaps.kick) {
			return
		}
	}
}

// reap returns expired leases of one slot, advances its sweep and schedules
// its next reap; it returns the next sweep cursor.
func (f *Forwarder) reap(ctx context.Context, k slotKey, cursor string) string {
	t := f.opt.Topics[k.topic]
	for {
		rctx, cancel := context.WithTimeout(ctx, redisTimeout)
		r, err := f.q.Reap(rctx, t.Topic, k.slot, reapLimit, cursor)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				f.m.RedisErrs.WithLabelValues("reap").Inc()
				f.redisFailed(t.Name, "reap failed", err)
			}
			f.reaps.note(k, time.Now().Add(reapPace))
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
			// The safety reap is planned in the mode in force now; a slot
			// reaped while polling is planned again by the sweep when
			// notifications start.
			// Each note keeps the earlier time: a sweep half done must
			// not put off the reap of a lease that expires sooner.
			f.reaps.note(k, time.Now().Add(f.reapSafety()))
			if cursor != "0" {
				f.reaps.note(k, time.Now().Add(reapPace)) // sweep on
			}
			if r.HasNext {
				f.reaps.note(k, time.Now().Add(r.NextLease.Sub(r.Now)+f.reapGrace()))
			}
			return cursor
		}
	}
}
