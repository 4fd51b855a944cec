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
	// epoch is the inflight epoch the claim was made in.
	epoch uint64
	// lease is the batch's handle in the scanner's leases, set when it is
	// handed over (hold.go).
	lease uint64
}

// claimLoop claims batches in score order and hands each to handoff, until
// ctx ends. Messages claimed ahead are held until due (hold.go); a message
// announced as due before them meanwhile is claimed at once if there is room.
func (s *scanner) claimLoop(ctx context.Context, handoff func(batch)) {
	retry := backoff.New(backoff.Policy{Min: claimRetryMin, Max: min(s.f.pollInterval(), claimRetryMax), Jitter: retryJitter})
	backlogged := false // the last claim was full: more is due
	var held []heldClaim
	defer s.returnOwed(ctx)
	for ctx.Err() == nil {
		limit, epoch, ok := s.room(ctx, held, backlogged)
		if !ok {
			s.returnHeld(ctx, held)
			return
		}
		c, claimed, back := queue.Claim{}, false, 0
		if limit > 0 {
			if c, claimed, back, limit, ok = s.gatedClaim(ctx, limit, epoch, retry, &held); !ok {
				s.returnHeld(ctx, held)
				return
			}
		}
		if len(held) > 0 {
			rest, ok := s.handOver(ctx, held, limit > 0, handoff)
			if !ok {
				return
			}
			if held = rest; len(held) > 0 {
				continue // an earlier message was announced: claim it first
			}
		}
		if !claimed {
			continue
		}
		if back > 0 {
			backlogged = false
			continue // what went back is due: ask the limit first, then claim it
		}
		// Members dead-lettered by the claim took room in it too.
		if backlogged = len(c.Messages)+c.Dead >= limit; backlogged {
			continue // more may be due already
		}
		// Look again when the next message falls due, at the latest after
		// the poll interval (a message scheduled earlier rings the alarm;
		// with keyspace notifications the interval is long, see
		// keyspace.go). A paused slot reports no next: it naps the poll
		// interval, and Resume's wake-up rings the alarm. A score of +inf
		// never falls due: the reaper dead-letters it.
		target := queue.Millis(c.Now) + float64(s.f.pollInterval())/float64(time.Millisecond)
		if c.HasNext {
			target = min(target, c.Next)
			if math.IsInf(c.Next, 1) {
				s.f.reaps.note(s.key, time.Now())
			}
		}
		s.returnOwed(ctx)
		s.rateBound = false // what was due is drained: claim first again
		if !s.nap(ctx, target, s.skew) {
			return
		}
	}
}

// gatedClaim claims up to limit messages as far as flow control lets it:
// it may lower the limit (returned), or hold the slot until it may claim.
// back is how many the claim took that the rate limit sent back (permitClaim).
// ok is false when ctx ended.
func (s *scanner) gatedClaim(ctx context.Context, limit int, epoch uint64, retry *backoff.Backoff, held *[]heldClaim) (c queue.Claim, claimed bool, back, n int, ok bool) {
	first := s.claimFirst()
	n, granted, ok := s.gate(ctx, limit, len(*held) == 0, first)
	if !ok || n == 0 {
		return c, false, 0, n, ok
	}
	c, claimed = s.claim(ctx, n, epoch, retry, held, len(*held) == 0)
	switch {
	case first && claimed:
		back = s.permitClaim(ctx, n, c, held)
	case first:
		s.flow.unclaimed(n)
	default:
		s.giveBack(n, granted, c, claimed)
	}
	return c, claimed, back, n, true
}

// room is how many messages the next claim may take and its epoch. With
// nothing held it waits for a connected sink and for room; while messages
// are held it does not wait (they must be handed over on time): 0 means no
// claim now. ok is false when ctx ended.
func (s *scanner) room(ctx context.Context, held []heldClaim, backlogged bool) (limit int, epoch uint64, ok bool) {
	opt := &s.f.opt
	if len(held) > 0 {
		limit, epoch = s.in.room(opt.BatchSize, opt.MaxInflightBatches*opt.BatchSize)
		return limit, epoch, ctx.Err() == nil
	}
	if !s.waitSink(ctx) {
		return 0, 0, false
	}
	return s.in.waitRoom(ctx, opt.BatchSize, opt.MaxInflightBatches*opt.BatchSize, backlogged)
}

// claim claims up to limit messages ahead and adds them to held. A failed
// claim is logged and, when wait, waited out with the retry back-off (not
// while messages are held: they are handed over first). claimed is false
// when the claim failed.
func (s *scanner) claim(ctx context.Context, limit int, epoch uint64, retry *backoff.Backoff, held *[]heldClaim, wait bool) (c queue.Claim, claimed bool) {
	s.alarm.reset()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
	before := time.Now()
	c, err := s.f.q.ClaimAhead(cctx, s.topic.Topic, s.slot, limit, s.f.opt.Lease, s.lookAhead())
	after := time.Now()
	cancel()
	if err != nil {
		s.f.m.RedisErrs.WithLabelValues("claim").Inc()
		d := retry.Next()
		s.f.redisFailed(s.topic.Name, "claim failed, retrying with backoff", err)
		if wait {
			sleep(ctx, d, nil)
		}
		return c, false
	}
	s.f.redisOK()
	retry.Reset()
	s.paused = c.Paused
	s.skew = c.Now.Sub(before.Add(after.Sub(before) / 2))
	if c.Dead > 0 {
		s.f.m.Dead.WithLabelValues(s.topic.Name).Add(float64(c.Dead))
		s.log.Warn("messages dead-lettered", "count", c.Dead, "err", "due time -inf can never be honoured")
	}
	if n := len(c.Messages); n > 0 {
		s.f.m.Claimed.WithLabelValues(s.topic.Name).Add(float64(n))
		s.in.add(n)
		b := batch{claimed: c.Messages, skew: s.skew, epoch: epoch}
		*held = append(*held, heldClaim{batch: b, msgs: b.claimed, now: c.Now, after: after, leased: before})
	}
	return c, true
}

// nap sleeps until Redis's clock reaches target (ms), or an earlier
// announced score; false when ctx ended.
func (s *scanner) nap(ctx context.Context, target float64, skew time.Duration) bool {
	for {
		at := s.alarm.plan(target)
		d := time.Until(queue.MillisTime(at).Add(-skew))
		if math.IsInf(at, -1) || d <= 0 {
			return true
		}
		woken, ok := sleepOrWake(ctx, d, s.alarm.C)
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
	since := time.Now()
	logged, blocked := false, ""
	defer func() {
		if blocked != "" {
			s.f.m.SinkBlocked.DeleteLabelValues(s.topic.Name, blocked)
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
					s.f.m.SinkBlocked.DeleteLabelValues(s.topic.Name, blocked)
				}
				blocked = reason
				s.f.m.SinkBlocked.WithLabelValues(s.topic.Name, reason).Set(1)
			}
			wait.Reset()
		} else if !logged && time.Since(since) > sinkQuietFor {
			s.log.Warn("sink not connected, not claiming", "err", err)
			logged = true
		}
		if !sleep(ctx, wait.Next(), nil) {
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
