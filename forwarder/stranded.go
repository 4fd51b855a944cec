package forwarder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/delaybridge/delaybridge/queue"
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

// strandedSearch searches for stranded slots at start and every interval,
// and counts the messages of those found every strandedCountEvery
// meanwhile. A stranded slot joins the slots that ownership shares out (see
// wanted), so its messages are claimed, published, retried and reaped like
// any other, under the same ownership and leases; it leaves them at the
// first search that finds it empty.
type strandedSearch struct {
	q      *queue.Queue
	m      *Metrics
	log    *slog.Logger
	topics []Topic
	every  time.Duration
	// found are the stranded slots of the last search; only run's
	// goroutine writes it, and it hands each new set to ownership whole.
	found   map[slotKey]bool
	handOff func(ctx context.Context, found map[slotKey]bool)
	passed  passes // tests: signalled after each search or count
}

// strandedConfig configures a strandedSearch.
type strandedConfig struct {
	Topics []Topic
	// Every is how often the keyspace is searched (default
	// DefaultStrandedInterval).
	Every time.Duration
	// HandOff gives ownership the stranded slots found by a search.
	HandOff func(ctx context.Context, found map[slotKey]bool)
}

func newStrandedSearch(cfg strandedConfig, q *queue.Queue, m *Metrics, log *slog.Logger) (*strandedSearch, error) {
	every := cmp.Or(cfg.Every, DefaultStrandedInterval)
	if every <= 0 || cfg.HandOff == nil {
		return nil, fmt.Errorf("stranded search: interval %s, hand-off set %t: want a positive interval and a hand-off", every, cfg.HandOff != nil)
	}
	return &strandedSearch{q: q, m: m, log: log, topics: cfg.Topics, every: every, handOff: cfg.HandOff}, nil
}

// run searches at start and every interval, counting between the
// searches while stranded slots are known, until ctx ends.
func (s *strandedSearch) run(ctx context.Context) {
	next := time.Now()
	for {
		if time.Now().Before(next) {
			s.count(ctx)
		} else {
			s.runOnce(ctx)
			next = time.Now().Add(s.every)
		}
		s.passed.signal()
		wait := time.Until(next)
		if len(s.found) > 0 {
			wait = min(wait, strandedCountEvery)
		}
		if !sleep(ctx, wait, nil) {
			return
		}
	}
}

// count sets the gauge of each topic with stranded slots to the messages
// they hold now. A count that fails keeps the last value; the next search
// tries again.
func (s *strandedSearch) count(ctx context.Context) {
	per := map[int][]int{}
	for k := range s.found {
		per[k.topic] = append(per[k.topic], k.slot)
	}
	for ti, slots := range per {
		t := s.topics[ti]
		sctx, cancel := context.WithTimeout(ctx, redisTimeout)
		left, err := s.q.CountStranded(sctx, t.Topic, slots)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.m.RedisErrs.WithLabelValues("stranded").Inc()
			}
			continue
		}
		var n int64
		for _, sl := range left {
			n += sl.Messages
		}
		s.m.Stranded.WithLabelValues(t.Name).Set(float64(n))
	}
}

// runOnce searches every slotted topic, updates the gauge, logs what it
// found and hands the stranded slots to ownership. A topic whose search
// failed keeps the slots found before.
func (s *strandedSearch) runOnce(ctx context.Context) pass {
	var p pass
	found := make(map[slotKey]bool, len(s.found))
	for k := range s.found {
		found[k] = true
	}
	for ti, t := range s.topics {
		if t.Key != "" {
			continue // an adopted key has one slot and no others
		}
		sctx, cancel := context.WithTimeout(ctx, strandedTimeout)
		slots, err := s.q.StrandedSlots(sctx, t.Topic)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return pass{done: p.done, err: ctx.Err()}
			}
			s.m.RedisErrs.WithLabelValues("stranded").Inc()
			s.log.Warn("search for stranded slots failed", "topic", t.Name, "err", err)
			p.err = errors.Join(p.err, fmt.Errorf("stranded slots of %s: %w", t.Name, err))
			continue
		}
		s.topicFound(ti, slots, found)
		p.done++
	}
	s.found = found
	s.handOff(ctx, found)
	return p
}

// topicFound replaces topic ti's slots in found with slots, sets its gauge
// and logs the change.
func (s *strandedSearch) topicFound(ti int, slots []queue.StrandedSlot, found map[slotKey]bool) {
	t := s.topics[ti]
	had := 0
	for k := range found {
		if k.topic == ti {
			delete(found, k)
			had++
		}
	}
	var n int64
	nums := make([]int, len(slots))
	for i, sl := range slots {
		found[slotKey{ti, sl.Slot}] = true
		n += sl.Messages
		nums[i] = sl.Slot
	}
	s.m.Stranded.WithLabelValues(t.Name).Set(float64(n))
	switch {
	case len(slots) > 0:
		s.log.Warn("messages in slots beyond the topic's slot count (resized, or a producer with other settings); draining them",
			"topic", t.Name, "slot_count", t.SlotCount(), "stranded_slots", nums, "count", n)
	case had > 0:
		s.log.Info("stranded slots drained", "topic", t.Name, "stranded_slots", had)
	}
}

// setStranded gives ownership the stranded slots a search found (a set the
// search no longer changes) and reassigns the owned slots.
func (f *Forwarder) setStranded(ctx context.Context, found map[slotKey]bool) {
	f.assignMu.Lock()
	f.stranded = found
	f.assignMu.Unlock()
	if gained, lost, owned := f.reassign(ctx); gained+lost > 0 {
		f.log.Info("ownership changed: stranded slots", "owned", owned, "gained", gained, "lost", lost)
	}
}
