package forwarder

import (
	"context"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// claimAhead is how far past Redis's now a claim also takes members (the
// look-ahead of queue.ClaimAhead). In steady traffic every message would
// otherwise be a claim of its own (at 250 messages/s a slot sees one every
// 4 ms); a window of 20 ms claims several at once, and the scanner holds
// them in memory until each falls due. It is capped at a tenth of the lease
// (the lease counts from the end of the window anyway).
const claimAhead = 20 * time.Millisecond

// lookAhead is the look-ahead of the scanner's claims.
func (s *scanner) lookAhead() time.Duration {
	return min(claimAhead, s.f.opt.Lease/10)
}

// handOver hands the messages of claim c to handoff in score order as they
// fall due: those due when c ran at once, those claimed ahead once their
// score has passed on Redis's clock, never before. after is the local time
// the claim returned: Redis read its clock (c.Now) before that, so at local
// time after+d Redis's clock reads at least c.Now+d, and a member of score
// sc is due by after + (sc - c.Now). mk turns a due part into a batch.
//
// It returns false when ctx ended while members were still held: they go
// back to the scheduled set at once, unpublished (shutdown returns what it
// has not published). A held member of a slot paused after its claim is
// still published at its due time: like a batch already in flight, it was
// claimed before the pause.
func (s *scanner) handOver(ctx context.Context, c queue.Claim, after time.Time, mk func([]queue.Claimed) batch, handoff func(batch)) bool {
	msgs := c.Messages
	dueBy := func(m queue.Claimed) time.Time {
		return after.Add(queue.MillisTime(m.Score).Sub(c.Now))
	}
	for len(msgs) > 0 {
		now := time.Now()
		n := 0
		for n < len(msgs) && !dueBy(msgs[n]).After(now) {
			n++
		}
		if n > 0 {
			handoff(mk(msgs[:n]))
			msgs = msgs[n:]
			continue
		}
		if !sleep(ctx, dueBy(msgs[0]).Sub(now), nil) {
			s.returnHeld(ctx, msgs)
			return false
		}
	}
	return true
}

// returnHeld puts members claimed ahead back in the scheduled set at their
// due times, without an attempt, when the scanner stops before they fall
// due. If Redis fails, the reaper returns them after their lease.
func (s *scanner) returnHeld(ctx context.Context, held []queue.Claimed) {
	members := make([]string, len(held))
	for i, m := range held {
		members[i] = m.Member
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
	_, err := s.f.q.Release(rctx, s.topic.Topic, s.slot, members)
	cancel()
	s.in.settle(len(held))
	if err != nil {
		s.f.m.RedisErrs.WithLabelValues("release").Inc()
		s.log.Warn("returning messages claimed ahead failed; the reaper returns them after their lease", "count", len(held), "err", err)
		return
	}
	s.f.m.Released.WithLabelValues(s.topic.Name).Add(float64(len(held)))
	s.log.Info("returned messages claimed ahead, not due yet", "count", len(held))
}
