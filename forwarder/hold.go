package forwarder

import (
	"context"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// claimAhead is how far past Redis's now a claim also takes members (the
// look-ahead of queue.ClaimAhead). In steady traffic every message would
// otherwise be a claim of its own (at 250 messages/s a slot sees one every
// 4 ms); a window of 100 ms claims some 25 at once, and the scanner holds
// them in memory until each falls due. The wider the window, the fewer the
// claims; a held message waits on a Go timer, which fires up to a
// millisecond late in a process with little else to do. With the scheduler
// on both processors 100 ms made held messages later (lateness p50 1.3-1.4
// -> 1.5-1.9 ms), and 20 ms was the compromise; on one processor (see
// internal/procs) 100 ms costs a tenth to a third of a millisecond at p50
// for 40% less Redis CPU (steady quick: 30-48 -> 18-32 µs per message) and
// less daemon CPU (docs/performance.md).
const claimAhead = 100 * time.Millisecond

// lookAhead is the look-ahead of the scanner's claims: claimAhead, at most
// a tenth of the lease (the lease counts from the end of the window anyway)
// and, while the slots are polled, at most the poll interval. A message
// written by a plain ZADD, with no wake-up and no keyspace notification, is
// seen by the next claim only; that is promised within the poll interval,
// and a hold longer than it would put the next claim off beyond it.
func (s *scanner) lookAhead() time.Duration {
	d := min(claimAhead, s.f.opt.Lease/10)
	if s.f.ks.get() == modePoll {
		d = min(d, s.f.opt.PollInterval)
	}
	return d
}

// heldClaim is the batch of one claim that the scanner has not handed over
// in full yet.
type heldClaim struct {
	batch
	// msgs are the messages still held, in score order: the tail of
	// batch.msgs not handed over yet.
	msgs []queue.Claimed
	// now is Redis's clock when the claim ran; after is the local time the
	// claim returned. Redis read now before after, so at local time
	// after+d Redis's clock reads at least now+d: a member of score sc is
	// due by after + (sc - now).
	now, after time.Time
	// leased is the local time the claim set the leases, no later than
	// Redis did.
	leased time.Time
}

func (h *heldClaim) dueBy(m queue.Claimed) time.Time {
	return h.after.Add(queue.MillisTime(m.Score).Sub(h.now))
}

// part takes h's first n held messages out as a batch of their own, whose
// lease the scanner renews from now on (lease.go) until it is settled.
func (s *scanner) part(h *heldClaim, n int) batch {
	b := h.batch
	b.claimed = h.msgs[:n]
	b.lease = s.leases.hold(b.claimed, h.leased)
	h.msgs = h.msgs[n:]
	s.leased()
	return b
}

// leased tells the reaper that this slot holds a lease from now on: if this
// replica dies, the slot's next owner reaps it when it acquires the slot,
// and if it lives, its own reaper looks when the lease could expire.
func (s *scanner) leased() {
	s.f.reaps.note(s.key, time.Now().Add(s.f.opt.Lease+s.f.reapGrace()))
}

// handOver hands held messages to handoff as they fall due: those due when
// their claim ran at once, those claimed ahead once their score has passed
// on Redis's clock, never before. With listen, a message announced on the
// alarm as due before the next held one ends the hold early: handOver
// returns what it still holds, and the scanner claims the announced message
// and hands over both (a claim ahead does not make a message scheduled
// meanwhile wait for the held ones).
//
// ok is false when ctx ended while members were still held: they go back
// to the scheduled set at once, unpublished (shutdown returns what it has
// not published). A held member of a slot paused after its claim is still
// published at its due time: like a batch already in flight, it was claimed
// before the pause.
func (s *scanner) handOver(ctx context.Context, held []heldClaim, listen bool, handoff func(batch)) (rest []heldClaim, ok bool) {
	for {
		next, score := s.handDue(&held, handoff)
		if len(held) == 0 {
			return nil, true
		}
		if listen && s.alarm.plan(score) < score {
			return held, true
		}
		var wake <-chan struct{}
		if listen {
			wake = s.alarm.C
		}
		if _, alive := sleepOrWake(ctx, time.Until(next), wake); !alive {
			s.returnHeld(ctx, held)
			return nil, false
		}
	}
}

// handDue hands over the due part of each held claim, drops the claims
// handed over in full, and returns when the next held message falls due
// (local time) and its score.
func (s *scanner) handDue(held *[]heldClaim, handoff func(batch)) (next time.Time, score float64) {
	now := time.Now()
	kept := (*held)[:0]
	for _, h := range *held {
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
	*held = kept
	return next, score
}

// returnHeld puts members claimed ahead back in the scheduled set at their
// due times, without an attempt, when the scanner stops before they fall
// due. If Redis fails, the reaper returns them after their lease.
func (s *scanner) returnHeld(ctx context.Context, held []heldClaim) {
	var members []string
	for _, h := range held {
		for _, m := range h.msgs {
			members = append(members, m.Member)
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
	_, err := s.f.q.Release(rctx, s.topic.Topic, s.slot, members)
	cancel()
	s.in.settle(len(members))
	if err != nil {
		s.f.m.RedisErrs.WithLabelValues("release").Inc()
		s.log.Warn("returning messages claimed ahead failed; the reaper returns them after their lease", "count", len(members), "err", err)
		return
	}
	s.f.m.Released.WithLabelValues(s.topic.Name).Add(float64(len(members)))
	s.log.Info("returned messages claimed ahead, not due yet", "count", len(members))
}
