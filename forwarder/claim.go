package forwarder

import (
	"context"
	"math"
	"time"

	"github.com/delaybridge/delaybridge/internal/backoff"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// After a failed claim the claimer waits claimRetryMin, doubling up to
// claimRetryMax (or the poll interval, if shorter): Redis gets room to
// recover, the end of an outage is noticed within seconds, and a slot never
// waits longer after an error than it would idle.
const (
	claimRetryMin = 50 * time.Millisecond
	claimRetryMax = 2 * time.Second
)

// batch is a claim's messages, or a due part of them, on their way from the
// claimer to the sink and on to Redis.
type batch struct {
	claimed []queue.Claimed
	// skew is Redis's clock minus the local clock at the claim, so lateness
	// is measured against the clock that decided the message was due.
	skew time.Duration
	// redisClock reads Redis's clock from the local monotonic one: the
	// ticks' gap rule takes the moment of their confirm from it. (The
	// scanner's own local time is its clock, clock.go.)
	redisClock redisClock
	// epoch is the inflight epoch the claim was made in.
	epoch uint64
	// lease is the batch's handle in the scanner's leases, set when it is
	// handed over (ahead.go).
	lease uint64
}

// aheadClaim is the batch of one claim that the scanner has not handed
// over in full yet (ahead.go): part of it may be claimed ahead, not due yet.
type aheadClaim struct {
	batch
	// msgs are the messages not handed over yet, in score order: the tail
	// of batch.claimed.
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

// redisClock reads Redis's clock from the local one: redis is Redis's TIME
// read by a claim, local the local time the claim returned. Redis read it
// before then, so at local time local+d Redis's clock reads at least
// redis+d: at is a lower bound of Redis's clock, never ahead of it. The
// elapsed time comes from the monotonic clock (local is a time.Now), so a
// step of the local wall clock does not move it; its error is at most the
// claim's round trip.
type redisClock struct {
	redis, local time.Time
}

// at is Redis's clock (a lower bound) at local time t, a time.Now later than
// the claim; t itself when c is unset.
func (c redisClock) at(t time.Time) time.Time {
	if c.local.IsZero() {
		return t
	}
	return c.redis.Add(t.Sub(c.local))
}

func (h *aheadClaim) dueBy(m queue.Claimed) time.Time {
	return h.after.Add(queue.MillisTime(m.Score).Sub(h.now))
}

// claimLoop claims batches in score order and hands each to handoff, until
// ctx ends. Messages claimed ahead wait until due (ahead.go); a message
// announced as due before them meanwhile is claimed at once if there is room.
func (s *scanner) claimLoop(ctx context.Context, handoff func(batch)) {
	retry := backoff.New(backoff.Policy{Min: claimRetryMin, Max: min(s.pollInterval(), claimRetryMax), Jitter: retryJitter})
	backlogged := false // the last claim was full: more is due
	var ahead []aheadClaim
	defer s.budget.rest(ctx)
	for ctx.Err() == nil {
		// With nothing claimed ahead the claimer waits for a connected
		// sink and for room; while messages claimed ahead wait it does not
		// (they must be handed over on time): the claim budget may admit none.
		wait := len(ahead) == 0
		if wait && !s.waitSink(ctx) {
			return
		}
		p, ok := s.budget.admit(ctx, wait, backlogged)
		if !ok {
			s.releaseAhead(ctx, ahead)
			return
		}
		limit := p.n
		var r round
		if limit > 0 {
			r = s.claimAdmitted(ctx, p, retry, &ahead)
		}
		if len(ahead) > 0 {
			rest, ok := s.handOver(ctx, ahead, limit > 0, handoff)
			if !ok {
				return
			}
			if ahead = rest; len(ahead) > 0 {
				continue // an earlier message was announced: claim it first
			}
		}
		if !r.claimed {
			continue
		}
		if r.back > 0 {
			backlogged = false
			continue // what went back is due: ask the limit first, then claim it
		}
		// Members dead-lettered by the claim took room in it too.
		if backlogged = len(r.c.Messages)+r.c.Dead >= limit; backlogged {
			continue // more may be due already
		}
		// Look again when the next message falls due, at the latest after
		// the poll interval (a message scheduled earlier rings the alarm;
		// with keyspace notifications the interval is long, see
		// keyspace.go). A paused slot reports no next: it naps the poll
		// interval, and Resume's wake-up rings the alarm. A score of +inf
		// never falls due: the reaper dead-letters it.
		target := queue.Millis(r.c.Now) + float64(s.pollInterval())/float64(time.Millisecond)
		if r.c.HasNext {
			target = min(target, r.c.Next)
			if math.IsInf(r.c.Next, 1) {
				s.reaps.note(s.key, time.Now())
			}
		}
		s.budget.rest(ctx) // what was due is drained
		if !s.nap(ctx, target, s.skew) {
			return
		}
	}
}

// round is one admitted claim.
type round struct {
	c       queue.Claim
	claimed bool // the claim ran (false: it failed)
	back    int  // how many it took that the rate limit refused (put back)
}

// claimAdmitted claims as many messages as the claim budget admitted (p) and adds
// them to ahead, then gives the claim budget back what the claim did not use; the
// tail the rate limit refused goes back at once.
func (s *scanner) claimAdmitted(ctx context.Context, p permit, retry *backoff.Backoff, ahead *[]aheadClaim) round {
	var r round
	r.c, r.claimed = s.claim(ctx, p.n, p.epoch, retry, ahead, len(*ahead) == 0)
	if refused := s.budget.takeBack(ctx, p, len(r.c.Messages), r.c.Dead, r.claimed); refused > 0 {
		r.back = s.refuse(ctx, ahead, refused)
	}
	return r
}

// refuse puts the last n messages claimed (the tail of the last of ahead)
// back at their due times: the rate limit did not grant them. The slot's
// order is kept, as they were claimed after every other.
func (s *scanner) refuse(ctx context.Context, ahead *[]aheadClaim, n int) int {
	h := &(*ahead)[len(*ahead)-1]
	rest := h.msgs[len(h.msgs)-n:]
	h.msgs = h.msgs[:len(h.msgs)-n]
	h.claimed = h.claimed[:len(h.claimed)-n]
	if len(h.msgs) == 0 {
		*ahead = (*ahead)[:len(*ahead)-1]
	}
	members := make([]string, len(rest))
	for i, m := range rest {
		members[i] = m.Member
	}
	s.release(ctx, members, backRefused)
	s.in.settle(n)
	return n
}

// claim claims up to limit messages ahead and adds them to ahead. A failed
// claim is logged and, when wait, waited out with the retry back-off (not
// while messages claimed ahead wait: they are handed over first). claimed
// is false when the claim failed.
func (s *scanner) claim(ctx context.Context, limit int, epoch uint64, retry *backoff.Backoff, ahead *[]aheadClaim, wait bool) (c queue.Claim, claimed bool) {
	s.alarm.reset()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
	before := s.clock.Now()
	// The scanner sleeps at most its poll interval: the claim need not
	// look for the next score any further (queue.ClaimOptions.NextWithin).
	c, err := s.store.ClaimWith(cctx, s.topic.Topic, s.key.slot, queue.ClaimOptions{
		Limit: limit, Lease: s.cfg.Lease, Ahead: s.lookAhead(), NextWithin: s.pollInterval(),
	})
	after := s.clock.Now()
	cancel()
	if err != nil {
		s.m.RedisErrs.WithLabelValues("claim").Inc()
		d := retry.Next()
		s.health.failed(s.topic.Name, "claim failed, retrying with backoff", err)
		if wait {
			s.sleep(ctx, d)
		}
		return c, false
	}
	s.health.ok(before)
	retry.Reset()
	s.budget.paused = c.Paused
	s.skew = c.Now.Sub(before.Add(after.Sub(before) / 2))
	if c.Dead > 0 {
		s.m.Dead.WithLabelValues(s.topic.Name).Add(float64(c.Dead))
		s.log.Warn("messages dead-lettered", "count", c.Dead, "err", "due time -inf can never be honoured")
	}
	if n := len(c.Messages); n > 0 {
		s.m.Claimed.WithLabelValues(s.topic.Name).Add(float64(n))
		s.in.add(n)
		b := batch{claimed: c.Messages, skew: s.skew, redisClock: redisClock{redis: c.Now, local: after}, epoch: epoch}
		*ahead = append(*ahead, aheadClaim{batch: b, msgs: b.claimed, now: c.Now, after: after, leased: before})
	}
	return c, true
}

// nap sleeps until Redis's clock reaches target (ms), or an earlier
// announced score; false when ctx ended.
func (s *scanner) nap(ctx context.Context, target float64, skew time.Duration) bool {
	for {
		at := s.alarm.plan(target)
		d := queue.MillisTime(at).Add(-skew).Sub(s.clock.Now())
		if math.IsInf(at, -1) || d <= 0 {
			return true
		}
		woken, ok := sleepOrWake(ctx, s.clock, d, s.alarm.C)
		if !ok {
			return false
		}
		if !woken {
			return true
		}
		target = at // an earlier message was announced: plan again
	}
}

// While the sink is not connected, waitSink asks it again after
// sinkPollMin, doubling up to sinkPollMax: a reconnect is noticed within a
// second, and a sink that stays down is not asked in a busy loop.
const (
	sinkPollMin = 20 * time.Millisecond
	sinkPollMax = time.Second
)

// sinkQuietFor is how long the sink may be not connected before it is
// logged: a sink still connecting at start-up is not worth a warning.
const sinkQuietFor = 2 * time.Second

// waitSink blocks while the sink reports it is not connected, so nothing is
// claimed that could not be published. It returns false when ctx ended.
//
// A broker that blocks publishing (sinks.BlockedError) is connected: the
// sink logs the block's start and end once, the SinkBlocked gauge names
// it, and waitSink asks again every sinkPollMin, so every slot claims again
// within a few tens of milliseconds after the block lifts.
func (s *scanner) waitSink(ctx context.Context) bool {
	wait := backoff.New(backoff.Policy{Min: sinkPollMin, Max: sinkPollMax, Jitter: retryJitter})
	since := s.clock.Now()
	logged, blocked := false, ""
	defer func() {
		if blocked != "" {
			s.m.SinkBlocked.DeleteLabelValues(s.topic.Name, blocked)
		}
	}()
	for {
		err := ping(ctx, s.topic.Sink)
		if err == nil {
			if logged {
				s.log.Info("sink connected again, claiming")
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if reason, ok := sinks.BlockReason(err); ok {
			if reason != blocked {
				if blocked != "" {
					s.m.SinkBlocked.DeleteLabelValues(s.topic.Name, blocked)
				}
				blocked = reason
				s.m.SinkBlocked.WithLabelValues(s.topic.Name, reason).Set(1)
			}
			wait.Reset()
		} else if !logged && s.clock.Now().Sub(since) > sinkQuietFor {
			s.log.Warn("sink not connected, not claiming", "err", err)
			logged = true
		}
		if !s.sleep(ctx, wait.Next()) {
			return false
		}
	}
}

// ping asks a sink that can tell whether it is connected.
func ping(ctx context.Context, s sinks.Sink) error {
	p, ok := s.(sinks.Pinger)
	if !ok {
		return nil
	}
	return p.Ping(ctx)
}
