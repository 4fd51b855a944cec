package forwarder

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/delaybridge/delaybridge/internal/logrepeat"
	"github.com/delaybridge/delaybridge/queue"
)

// reapLimit is the most expired leases returned per call.
const reapLimit = 1000

// The reaper reaps a slot when this replica acquires it (the replica that
// owned it may have died holding leases), then when a lease of the slot
// could have expired: the reap script returns the earliest lease deadline
// left in flight, and a claim (this replica's, or in keyspace mode any
// replica's, seen as a notification) adds one a lease from now. Besides,
// every slot is reaped at least every reapSafety: a replica that claimed in
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

// reapGrace is how long after a lease's deadline the reaper looks: a live
// claimer renews its slow batches' leases a third of a lease ahead, but on a
// loaded machine a renewal may come late, and reaping at the very deadline
// would publish such a batch twice. An eighth of the lease (at most 1 s) is
// what the reaper's old fixed pace (a quarter of the lease) gave on average.
func reapGrace(lease time.Duration) time.Duration {
	return min(max(lease/8, 2*time.Millisecond), time.Second)
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

// reaper reaps the owned slots when they are due (see reapSchedule).
type reaper struct {
	q        *queue.Queue
	m        *Metrics
	log      *slog.Logger
	health   *redisHealth
	topics   []Topic
	lease    time.Duration
	schedule *reapSchedule
	wakes    *wakeups
	ks       *keyspaceState
	// cursors are each slot's sweep cursor (queue.Reap); run's only.
	cursors map[slotKey]string
	passed  passes // tests: signalled after each pass that reaped
}

// reaperConfig configures a reaper.
type reaperConfig struct {
	Topics []Topic
	// Lease is the claims' lease (default: Defaults()'s): it sets the reaper's
	// grace and, while polling, its safety interval.
	Lease time.Duration
	// Health logs a failed reap as one of Redis's repeating failures.
	Health *redisHealth
}

func newReaper(cfg reaperConfig, q *queue.Queue, m *Metrics, log *slog.Logger, shared slotShared) (*reaper, error) {
	lease := cmp.Or(cfg.Lease, Defaults().Lease)
	if lease <= 0 {
		return nil, fmt.Errorf("reaper: lease %s: want a positive duration", lease)
	}
	if cfg.Health == nil {
		cfg.Health = newRedisHealth(logrepeat.New(log, 0), log, 0)
	}
	return &reaper{q: q, m: m, log: log, health: cfg.Health, topics: cfg.Topics, lease: lease, schedule: shared.reaps, wakes: shared.wakes, ks: shared.ks,
		cursors: map[slotKey]string{}}, nil
}

// reapSafety is the longest a slot goes unreaped: with notifications
// reapSafetyKeyspace; without, the lease (from 5 s to 5 min), as a dead
// claimer's leases may only be found by looking.
func (r *reaper) reapSafety() time.Duration {
	if r.ks.get() != modePoll {
		return reapSafetyKeyspace
	}
	return min(max(r.lease, 5*time.Second), 5*time.Minute)
}

// run reaps the slots as they fall due until ctx ends.
func (r *reaper) run(ctx context.Context) {
	for ctx.Err() == nil {
		if p := r.runOnce(ctx); p.done == 0 && !sleep(ctx, time.Until(p.next), r.schedule.kick) {
			return
		}
		// After reaps: they took time, so look at the schedule again.
	}
}

// runOnce reaps the slots due now: done is how many (0: none was due) and
// next when the next is due (at the latest in a minute).
func (r *reaper) runOnce(ctx context.Context) pass {
	now := time.Now()
	ks, first := r.schedule.due(now, now.Add(time.Minute))
	for _, k := range ks {
		if ctx.Err() != nil {
			return pass{done: len(ks), next: first}
		}
		r.cursors[k] = r.reap(ctx, k, r.cursors[k])
	}
	if len(ks) > 0 {
		r.passed.signal()
	}
	return pass{done: len(ks), next: first}
}

// reap returns expired leases of one slot, advances its sweep and schedules
// its next reap; it returns the next sweep cursor.
func (r *reaper) reap(ctx context.Context, k slotKey, cursor string) string {
	t := r.topics[k.topic]
	for {
		rctx, cancel := context.WithTimeout(ctx, redisTimeout)
		res, err := r.q.Reap(rctx, t.Topic, k.slot, reapLimit, cursor)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				r.m.RedisErrs.WithLabelValues("reap").Inc()
				r.health.failed(t.Name, "reap failed", err)
			}
			r.schedule.note(k, time.Now().Add(reapPace))
			return cursor
		}
		cursor = res.Cursor
		if res.Reaped > 0 {
			r.m.Reaped.WithLabelValues(t.Name).Add(float64(res.Reaped))
			r.log.Warn("returned expired leases", "topic", t.Name, "slot", k.slot, "count", res.Reaped)
			r.wakes.wake(k, math.Inf(-1)) // due now
		}
		if res.Dead > 0 {
			r.m.Dead.WithLabelValues(t.Name).Add(float64(res.Dead))
			r.log.Warn("dead-lettered messages that can never fall due", "topic", t.Name, "slot", k.slot, "count", res.Dead)
		}
		if res.Reaped < reapLimit {
			// The safety reap is planned in the mode in force now; a slot
			// reaped while polling is planned again by the sweep when
			// notifications start.
			// Each note keeps the earlier time: a sweep half done must
			// not put off the reap of a lease that expires sooner.
			r.schedule.note(k, time.Now().Add(r.reapSafety()))
			if cursor != "0" {
				r.schedule.note(k, time.Now().Add(reapPace)) // sweep on
			}
			if res.HasNext {
				r.schedule.note(k, time.Now().Add(res.NextLease.Sub(res.Now)+reapGrace(r.lease)))
			}
			return cursor
		}
	}
}
