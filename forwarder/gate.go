package forwarder

import (
	"context"
	"time"

	"github.com/delaybridge/delaybridge/internal/backoff"
	"github.com/delaybridge/delaybridge/queue"
)

// The gate is where a scanner asks its topic's flow control (flow.go) how
// many messages its next claim may take: never more than the queue depth
// limit leaves room for, and never more than the rate limit grants. The
// claim then takes at most that many, and what it did not take goes back
// (giveBack): the queue depth's room at once, the permits with the slot's
// next Acquire when it claims again at once, or on their own before it
// naps, so a slot with less due than it was granted does not keep the
// other slots' share and a short claim in a drain costs no round trip of
// its own. A topic without limits passes at no cost.

// After a failed grant the scanner waits acquireRetryMin, doubling up to
// acquireRetryMax: a limited topic claims nothing it has no permit for.
const (
	acquireRetryMin = 50 * time.Millisecond
	acquireRetryMax = 2 * time.Second
)

// gate returns how many messages the claim about to run may take, at most
// limit. With wait it waits until that is at least one (a held topic);
// without (messages claimed ahead are waiting to be handed over) it may
// return 0. ok is false when ctx ended. granted is how many of n came
// from the rate limiter, for giveBack. With first, the rate limit is not
// asked here: the claim runs first and permitClaim asks for what it took.
func (s *scanner) gate(ctx context.Context, limit int, wait, first bool) (n, granted int, ok bool) {
	ft := s.flow
	if !ft.limited() {
		return limit, 0, true
	}
	var held time.Time
	why := ""
	defer func() {
		if !held.IsZero() {
			s.unhold(why, held)
		}
	}()
	retry := backoff.New(backoff.Policy{Min: acquireRetryMin, Max: acquireRetryMax, Jitter: retryJitter})
	for {
		room, r := ft.holdRoom(ctx, limit)
		d := depthInterval - time.Since(r.at)
		reason := heldQueue
		if room > 0 && first {
			return room, 0, true
		}
		if room > 0 {
			n, granted, d = s.permits(ctx, room, retry)
			if n > 0 {
				ft.unclaimed(room - n)
				return n, granted, true
			}
			ft.unclaimed(room)
			reason = heldRate
		}
		if !wait || ctx.Err() != nil {
			return 0, 0, ctx.Err() == nil
		}
		if why != reason {
			if !held.IsZero() {
				s.unhold(why, held)
			}
			why, held = reason, s.hold(reason)
		}
		if !sleep(ctx, max(d, time.Millisecond), nil) {
			return 0, 0, false
		}
	}
}

// permits asks the rate limiter for up to want permits (all of them when
// the topic has no rate limit). n is how many the claim may take, granted
// how many came from the limiter; when none, wait is how long until some.
func (s *scanner) permits(ctx context.Context, want int, retry *backoff.Backoff) (n, granted int, wait time.Duration) {
	rate := s.flow.rateNow()
	if rate <= 0 {
		return want, 0, 0
	}
	rctx, cancel := context.WithTimeout(ctx, redisTimeout)
	g, err := s.f.q.Acquire(rctx, s.topic.Topic, rate, want, s.owed)
	cancel()
	if err == nil {
		s.owed = 0
	}
	if err != nil {
		s.f.m.RedisErrs.WithLabelValues("acquire").Inc()
		d := retry.Next()
		s.f.redisFailed(s.topic.Name, "asking the rate limit for permits failed; claiming nothing until it answers", err)
		return 0, 0, d
	}
	retry.Reset()
	return g.Permits, g.Permits, g.Wait
}

// claimFirst says whether the next claim runs before the rate limit is
// asked (permitClaim): on a topic with a rate limit, unless the limit bound
// since the slot last napped (it then drains what is due asking first, with
// no claim taken and sent back per batch). A claim run first costs one
// Acquire for what it took and none for an empty one, where asking first
// for a whole batch costs a second call to give back what a short claim
// left.
func (s *scanner) claimFirst() bool {
	return !s.rateBound && s.flow.rateNow() > 0
}

// permitClaim asks the rate limit for the messages the claim c just took
// (the last of held, when it took any), with the permits the slot owes.
// Those it does not grant go back to the scheduled set at their due times
// (the claim's tail: the slot's order is kept), and the slot asks before
// claiming until a grant gives all it asked for; a failed Acquire sends
// the whole claim back. It returns how many went back, and gives the
// queue depth limit back the room the claim did not keep, of n.
func (s *scanner) permitClaim(ctx context.Context, n int, c queue.Claim, held *[]heldClaim) (back int) {
	k := len(c.Messages)
	granted := k
	if k > 0 || s.owed > 0 {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
		g, err := s.f.q.Acquire(rctx, s.topic.Topic, s.flow.rateNow(), k, s.owed)
		cancel()
		if err != nil {
			s.f.m.RedisErrs.WithLabelValues("acquire").Inc()
			s.log.Warn("asking the rate limit for permits failed; the claim goes back", "err", err)
			granted = 0
		} else {
			s.owed, granted = 0, g.Permits
		}
	}
	s.flow.unclaimed(n - granted - c.Dead)
	if granted >= k {
		return 0
	}
	s.rateBound = true
	h := &(*held)[len(*held)-1]
	rest := h.msgs[len(h.msgs)-(k-granted):]
	h.msgs = h.msgs[:len(h.msgs)-len(rest)]
	h.claimed = h.claimed[:len(h.claimed)-len(rest)]
	if len(h.msgs) == 0 {
		*held = (*held)[:len(*held)-1]
	}
	members := make([]string, len(rest))
	for i, m := range rest {
		members[i] = m.Member
	}
	s.redisRetry(ctx, "release", func(c context.Context) error {
		_, err := s.f.q.Release(c, s.topic.Topic, s.slot, members)
		return err
	})
	s.f.m.Released.WithLabelValues(s.topic.Name).Add(float64(len(rest)))
	s.in.settle(len(rest))
	return len(rest)
}

// giveBack returns what a claim of n messages (granted of them by the
// rate limiter) did not take: the room to the queue depth limit at once,
// the permits to s.owed, which the next Acquire or returnOwed gives back.
func (s *scanner) giveBack(n, granted int, c queue.Claim, claimed bool) {
	if !s.flow.limited() {
		return
	}
	used := 0
	if claimed {
		used = len(c.Messages) + c.Dead
	}
	s.flow.unclaimed(n - used)
	if back := min(granted, n-used); back > 0 {
		s.owed += back
	}
}

// returnOwed gives the permits the slot owes back to the rate limiter, one
// round trip, before the scanner naps or stops: unused, they would lower
// the topic's rate until the window forgets them.
func (s *scanner) returnOwed(ctx context.Context) {
	back, rate := s.owed, s.flow.rateNow()
	s.owed = 0
	if back <= 0 || rate <= 0 {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
	_, err := s.f.q.Acquire(rctx, s.topic.Topic, rate, 0, back)
	cancel()
	if err != nil {
		s.f.m.RedisErrs.WithLabelValues("acquire").Inc()
		s.log.Debug("giving unused permits back failed; the limit's share of them is lost", "count", back, "err", err)
	}
}

// hold records that the scanner starts waiting for its topic's flow
// control, for reason; unhold that it stopped. While a slot's last claim
// found it paused, its wait is not counted as held by the limits: pause
// holds it anyway.
func (s *scanner) hold(reason string) time.Time {
	s.flow.sawHeld(reason)
	if s.flow.heldBy(reason).Add(1) == 1 {
		s.f.m.Held.WithLabelValues(s.topic.Name, reason).Set(1)
	}
	return time.Now()
}

func (s *scanner) unhold(reason string, since time.Time) {
	if s.flow.heldBy(reason).Add(-1) == 0 {
		s.f.m.Held.WithLabelValues(s.topic.Name, reason).Set(0)
	}
	if !s.paused {
		s.f.m.HeldSeconds.WithLabelValues(s.topic.Name, reason).Add(time.Since(since).Seconds())
	}
}
