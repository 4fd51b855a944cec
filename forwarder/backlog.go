package forwarder

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// backlogGauges refreshes the backlog gauges of the owned slots. With
// keyspace notifications of every class (modeAll) a slot is read again only
// when it may have changed: an event or a wake-up came for it, or time alone
// changes its numbers (a message falls due, or some are overdue); else its
// last numbers are reused. Without them every slot is read each time.
type backlogGauges struct {
	q      *queue.Queue
	m      *Metrics
	topics []Topic
	every  time.Duration
	owned  func() []slotKey // the slots scanned now
	stats  *statsCache
	ks     *keyspaceState
	passed passes // tests: signalled after each pass
}

// backlogConfig configures backlogGauges.
type backlogConfig struct {
	Topics []Topic
	// Every is how often every owned slot is read (default: Defaults()'s
	// BacklogInterval); a slot acquired is read at once.
	Every time.Duration
	Owned func() []slotKey
}

func newBacklogGauges(cfg backlogConfig, q *queue.Queue, m *Metrics, shared slotShared) (*backlogGauges, error) {
	every := cmp.Or(cfg.Every, Defaults().BacklogInterval)
	if every <= 0 || cfg.Owned == nil {
		return nil, fmt.Errorf("backlog gauges: interval %s, owned slots set %t: want a positive interval and the owned slots", every, cfg.Owned != nil)
	}
	return &backlogGauges{q: q, m: m, topics: cfg.Topics, every: every, owned: cfg.Owned, stats: shared.stats, ks: shared.ks}, nil
}

// run refreshes the gauges every interval, and at once when slots without
// numbers are acquired, until ctx ends.
func (g *backlogGauges) run(ctx context.Context) {
	for {
		g.runOnce(ctx)
		if !sleep(ctx, g.every, g.stats.kick) {
			return
		}
	}
}

// backlog is what the gauges of one topic show, summed over its owned slots.
type backlog struct {
	scheduled, overdue, retrying, inflight, dead, recurring, fairKeys, dedupIDs int64
	// oldest is the age of the oldest overdue message (the max over the
	// slots), by Redis's clock: the stats call reads TIME with the scores.
	oldest time.Duration
	// paused: an owned slot is paused (pause sets every slot of a topic).
	paused, sampled bool
}

// runOnce reads the owned slots' numbers (those that may have changed) and
// sets the gauges; a failed read keeps the last values rather than report
// a partial sum.
func (g *backlogGauges) runOnce(ctx context.Context) pass {
	defer g.passed.signal()
	per := make([]backlog, len(g.topics))
	owned := g.owned()
	g.stats.keep(owned)
	events := g.ks.get() == modeAll
	for _, k := range owned {
		st, fresh := g.stats.reuse(k, events)
		if !fresh {
			sctx, cancel := context.WithTimeout(ctx, redisTimeout)
			var err error
			st, err = g.q.Backlog(sctx, g.topics[k.topic].Topic, k.slot)
			cancel()
			if err != nil {
				g.stats.mark(k)
				if ctx.Err() == nil {
					g.m.RedisErrs.WithLabelValues("stats").Inc()
				}
				// Keep the last values rather than report a partial sum.
				return pass{err: fmt.Errorf("backlog of %s slot %d: %w", g.topics[k.topic].Name, k.slot, err)}
			}
			g.stats.store(k, st)
		}
		p := &per[k.topic]
		p.scheduled += st.Scheduled
		p.overdue += st.Overdue
		p.retrying += st.Retrying
		p.inflight += st.Inflight
		p.dead += st.Dead
		p.recurring += st.Recurring
		p.fairKeys += st.FairKeys
		p.dedupIDs += st.DedupIDs
		p.paused = p.paused || st.Pause.Paused
		p.sampled = true
		if !st.OldestOverdue.IsZero() {
			p.oldest = max(p.oldest, st.Now.Sub(st.OldestOverdue))
		}
	}
	if err := g.probePaused(ctx, per); err != nil {
		return pass{done: len(owned), err: err}
	}
	g.set(per)
	return pass{done: len(owned)}
}

// set sets the topics' gauges to per, a pass's sums.
func (g *backlogGauges) set(per []backlog) {
	for i, t := range g.topics {
		gauge, b := g.m.Backlog, per[i]
		gauge.WithLabelValues(t.Name, "scheduled").Set(float64(b.scheduled))
		gauge.WithLabelValues(t.Name, "overdue").Set(float64(b.overdue))
		gauge.WithLabelValues(t.Name, "retrying").Set(float64(b.retrying))
		gauge.WithLabelValues(t.Name, "inflight").Set(float64(b.inflight))
		gauge.WithLabelValues(t.Name, "dead").Set(float64(b.dead))
		g.m.Overdue.WithLabelValues(t.Name).Set(b.oldest.Seconds())
		g.m.Recurrences.WithLabelValues(t.Name).Set(float64(b.recurring))
		g.m.FairKeys.WithLabelValues(t.Name).Set(float64(b.fairKeys))
		g.m.DedupIDs.WithLabelValues(t.Name).Set(float64(b.dedupIDs))
		paused := 0.0
		if b.paused {
			paused = 1
		}
		g.m.Paused.WithLabelValues(t.Name).Set(paused)
	}
}

// probePaused reads slot 0 of every topic this replica owns no slot of, so
// topic_paused is right on every replica, not only on the slots' owners
// (a max over replicas then never hides a pause). False on an error.
func (g *backlogGauges) probePaused(ctx context.Context, per []backlog) error {
	for i, t := range g.topics {
		if per[i].sampled {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, redisTimeout)
		st, err := g.q.Backlog(sctx, t.Topic, 0)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				g.m.RedisErrs.WithLabelValues("stats").Inc()
			}
			return fmt.Errorf("pause of %s: %w", t.Name, err)
		}
		per[i].paused = st.Pause.Paused
	}
	return nil
}

// statsCache holds the last stats of each owned slot and whether the slot
// may have changed since (an event or wake-up marked it).
type statsCache struct {
	mu    sync.Mutex
	last  map[slotKey]cachedStats
	dirty map[slotKey]bool
	// kick refreshes at once when slots have no numbers yet (acquired, or
	// forgotten by all), rather than a BacklogInterval later: their gauges
	// are right from the start, and the reads of a daemon that just took
	// over many slots come at start-up, not ten seconds into its idling.
	kick chan struct{}
}

type cachedStats struct {
	st queue.SlotStats
	at time.Time // local time of the read
}

func newStatsCache() *statsCache {
	return &statsCache{last: map[slotKey]cachedStats{}, dirty: map[slotKey]bool{}, kick: make(chan struct{}, 1)}
}

// poke asks for a refresh now; never blocks.
func (c *statsCache) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// mark records that k may have changed.
func (c *statsCache) mark(k slotKey) {
	c.mu.Lock()
	c.dirty[k] = true
	c.mu.Unlock()
}

// all forgets every slot's numbers (notifications may have been lost).
func (c *statsCache) all() {
	c.mu.Lock()
	clear(c.last)
	c.mu.Unlock()
	c.poke()
}

// keep forgets the slots not in owned.
func (c *statsCache) keep(owned []slotKey) {
	in := make(map[slotKey]bool, len(owned))
	for _, k := range owned {
		in[k] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.last {
		if !in[k] {
			delete(c.last, k)
		}
	}
	for k := range c.dirty {
		if !in[k] {
			delete(c.dirty, k)
		}
	}
}

// reuse returns k's last numbers and true when they still hold: events
// announce every change (trust) and none came, and time alone cannot have
// changed them (nothing overdue, the next due time not reached). Otherwise
// it clears k's mark before the caller reads it, so a change during the
// read marks it again.
func (c *statsCache) reuse(k slotKey, trust bool) (queue.SlotStats, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.last[k]
	if trust && ok && !c.dirty[k] && l.st.Overdue == 0 &&
		(l.st.NextDue.IsZero() || l.st.Now.Add(time.Since(l.at)).Before(l.st.NextDue)) {
		return l.st, true
	}
	delete(c.dirty, k)
	return queue.SlotStats{}, false
}

// store records k's numbers just read.
func (c *statsCache) store(k slotKey, st queue.SlotStats) {
	c.mu.Lock()
	c.last[k] = cachedStats{st: st, at: time.Now()}
	c.mu.Unlock()
}
