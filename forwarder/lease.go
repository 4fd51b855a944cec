package forwarder

import (
	"context"
	"sync"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// leases tracks the batches a scanner has claimed and not yet settled, so
// their leases are renewed while they are still being worked on (a stalled
// broker, a loaded machine, a huge message). Only a replica that died or
// lost Redis lets its leases expire; a live one is never reaped from under
// itself, which would publish the batch again.
//
// Renewing needs a goroutine only while something is leased: track starts
// one through keeper when none runs, and it ends at the first tick that
// finds nothing leased, so an idle slot costs no goroutine for its leases.
type leases struct {
	mu      sync.Mutex
	next    uint64
	batches map[uint64]*leasedBatch
	// keeper starts a goroutine that renews the leases (keepLeases);
	// keeping is true while one runs. Nil: track starts none (tests).
	keeper  func()
	keeping bool
}

type leasedBatch struct {
	claimed []queue.Claimed
	renewed time.Time // when the lease was last set (claim or Extend)
}

func newLeases() *leases { return &leases{batches: map[uint64]*leasedBatch{}} }

// track registers a claimed batch whose lease was set at claimed and
// returns its handle for drop.
func (l *leases) track(claimed []queue.Claimed, at time.Time) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	l.batches[l.next] = &leasedBatch{claimed: claimed, renewed: at}
	if !l.keeping && l.keeper != nil {
		l.keeping = true
		l.keeper()
	}
	return l.next
}

// drop forgets a settled batch.
func (l *leases) drop(id uint64) {
	l.mu.Lock()
	delete(l.batches, id)
	l.mu.Unlock()
}

// stale returns the members of batches whose lease was set before cutoff
// and marks them renewed at now. idle is true when nothing is leased: the
// keeper that asked ends, and the next track starts another.
func (l *leases) stale(cutoff, now time.Time) (members []string, idle bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.batches) == 0 {
		l.keeping = false
		return nil, true
	}
	for _, h := range l.batches {
		if h.renewed.Before(cutoff) {
			for _, c := range h.claimed {
				members = append(members, c.Member)
			}
			h.renewed = now
		}
	}
	return members, false
}

// keepLeases renews, every third of a lease, the leases of batches in flight
// for more than a third of one, until ctx ends or nothing is leased.
func (s *scanner) keepLeases(ctx context.Context) {
	lease := s.cfg.Lease
	every := max(lease/3, 10*time.Millisecond)
	t := s.clock.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		now := s.clock.Now()
		members, idle := s.leases.stale(now.Add(-every), now)
		if idle {
			return
		}
		if len(members) == 0 {
			continue
		}
		ectx, cancel := context.WithTimeout(ctx, min(every, redisTimeout))
		n, err := s.store.Extend(ectx, s.topic.Topic, s.key.slot, members, lease)
		cancel()
		if err != nil {
			s.m.RedisErrs.WithLabelValues("extend").Inc()
			s.log.Warn("renewing leases failed; they may be reaped and published again", "count", len(members), "err", err)
			continue
		}
		s.log.Debug("renewed leases of a slow batch", "count", n)
	}
}
