package forwarder

import (
	"context"
	"time"
)

// claimAhead is how far past Redis's now a claim also takes members (the
// look-ahead of queue.ClaimAhead). In steady traffic every message would
// otherwise be a claim of its own (at 250 messages/s a slot sees one every
// 4 ms); a window of 100 ms claims some 25 at once, and the scanner keeps
// them in memory until each falls due. The wider the window, the fewer the
// claims and the less Redis and daemon CPU per message; the price is a
// message claimed ahead waiting on a Go timer, which fires up to a
// millisecond late in a busy process. With the daemon on one processor (see
// internal/procs) 100 ms costs a fraction of a millisecond of lateness;
// bench/ measures both sides (docs/performance.md), the runs that chose
// the value are in this constant's git history.
const claimAhead = 100 * time.Millisecond

// lookAhead is the look-ahead of the scanner's claims: claimAhead, at most
// a tenth of the lease (the lease counts from the end of the window anyway)
// and, while the slots are polled, at most the poll interval. A message
// written by a plain ZADD, with no wake-up and no keyspace notification, is
// seen by the next claim only; that is promised within the poll interval,
// and a hold longer than it would put the next claim off beyond it.
func (s *scanner) lookAhead() time.Duration {
	d := min(claimAhead, s.cfg.Lease/10)
	if s.ks.get() == modePoll {
		d = min(d, s.cfg.PollInterval)
	}
	return d
}

// part takes h's first n waiting messages out as a batch of their own, whose
// lease the scanner renews from now on (lease.go) until it is settled.
func (s *scanner) part(h *aheadClaim, n int) batch {
	b := h.batch
	b.claimed = h.msgs[:n]
	b.lease = s.leases.track(b.claimed, h.leased)
	h.msgs = h.msgs[n:]
	s.leased()
	return b
}

// leased tells the reaper that this slot holds a lease from now on: if this
// replica dies, the slot's next owner reaps it when it acquires the slot,
// and if it lives, its own reaper looks when the lease could expire.
func (s *scanner) leased() {
	s.reaps.note(s.key, time.Now().Add(s.cfg.Lease+reapGrace(s.cfg.Lease)))
}

// handOver hands messages claimed ahead to handoff as they fall due: those
// due when their claim ran at once, the others once their score has passed
// on Redis's clock, never before. With listen, a message announced on the
// alarm as due before the next waiting one ends the wait early: handOver
// returns what is still waiting, and the scanner claims the announced
// message and hands over both (a claim ahead does not make a message
// scheduled meanwhile wait for the ones claimed ahead).
//
// ok is false when ctx ended while members were still waiting: they go
// back to the scheduled set at once, unpublished (shutdown returns what it
// has not published). A member claimed ahead in a slot paused after its
// claim is still published at its due time: like a batch already in
// flight, it was claimed before the pause.
func (s *scanner) handOver(ctx context.Context, ahead []aheadClaim, listen bool, handoff func(batch)) (rest []aheadClaim, ok bool) {
	for {
		next, score := s.handDue(&ahead, handoff)
		if len(ahead) == 0 {
			return nil, true
		}
		if listen && s.alarm.plan(score) < score {
			return ahead, true
		}
		var wake <-chan struct{}
		if listen {
			wake = s.alarm.C
		}
		if _, alive := sleepOrWake(ctx, s.clock, next.Sub(s.clock.Now()), wake); !alive {
			s.releaseAhead(ctx, ahead)
			return nil, false
		}
	}
}

// handDue hands over the due part of each claim ahead, drops the claims
// handed over in full, and returns when the next waiting message falls due
// (local time) and its score.
func (s *scanner) handDue(ahead *[]aheadClaim, handoff func(batch)) (next time.Time, score float64) {
	now := s.clock.Now()
	kept := (*ahead)[:0]
	for _, h := range *ahead {
		n := 0
		for n < len(h.msgs) && !h.dueBy(h.msgs[n]).After(now) {
			n++
		}
		if n > 0 {
			handoff(s.part(&h, n))
		}
		if len(h.msgs) == 0 {
			continue
		}
		kept = append(kept, h)
		if d := h.dueBy(h.msgs[0]); next.IsZero() || d.Before(next) {
			next, score = d, h.msgs[0].Score
		}
	}
	*ahead = kept
	return next, score
}

// releaseAhead puts members claimed ahead back in the scheduled set at their
// due times, without an attempt, when the scanner stops before they fall
// due (release; if Redis fails, the reaper returns them after their lease).
func (s *scanner) releaseAhead(ctx context.Context, ahead []aheadClaim) {
	var members []string
	for _, h := range ahead {
		for _, m := range h.msgs {
			members = append(members, m.Member)
		}
	}
	if s.release(ctx, members, backStopping) && len(members) > 0 {
		s.log.Info("returned messages claimed ahead, not due yet", "count", len(members))
	}
	s.in.settle(len(members))
}
