package forwarder

import (
	"context"
	"log/slog"
	"time"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/internal/backoff"
	"github.com/delaybridge/delaybridge/queue"
)

// The claim budget is where one scanner decides how much it claims, in two
// calls per claim: admit answers how many messages the claim may take now
// (the slot's in-flight room, then its topic's flow control, flow.go: the
// queue depth limit's room and the rate limit's permits), and takeBack,
// once the claim has run, takes back what it did not use: the
// queue depth's room at once, the permits with the slot's next Acquire, or
// on their own before it naps (rest), so a slot with less due than it was
// granted does not keep the other slots' share and a short claim in a
// drain costs no round trip of its own. A topic without limits passes at
// no cost.
//
// On a topic with a rate limit the claim usually runs first (admit asks
// nothing of the rate limit) and takeBack asks for what it took: one
// Acquire for a claim, none for an empty one. The tail it does not grant
// goes back (release), and the slot asks before claiming from then until it
// naps (rateBound).

// After a failed grant the scanner waits acquireRetryMin, doubling up to
// acquireRetryMax: a limited topic claims nothing it has no permit for.
const (
	acquireRetryMin = 50 * time.Millisecond
	acquireRetryMax = 2 * time.Second
)

// claimBudget is one scanner's claim budget: its in-flight cap and its topic's
// flow control.
type claimBudget struct {
	in *inflight
	// batch is the most one claim takes, most the most in flight.
	batch, most int
	// pace, on a fair topic only, sizes the claims by the slot's drain
	// rate (pace.go); nil: batch and most as they are.
	pace   *pace
	flow   *flowTopic
	fs     *flowstate.Store
	health *redisHealth
	topic  queue.Topic
	m      *Metrics
	log    *slog.Logger
	// owed are rate-limit permits granted and not used by the claims they
	// were granted for: given back with the next Acquire, or by rest.
	owed int
	// rateBound is true from a claim the rate limit did not grant whole
	// until the slot naps: admit asks the limit before claiming meanwhile.
	rateBound bool
	// paused is true while the slot's last claim found the topic paused:
	// its wait is then not counted as held by the limits (pause holds it
	// anyway).
	paused bool
}

// permit is what admit let one claim take.
type permit struct {
	n       int    // the most messages the claim may take (0: none now)
	epoch   uint64 // the inflight epoch the claim belongs to
	granted int    // of n, the permits the rate limiter granted before the claim
	after   bool   // the rate limit is asked after the claim, for what it took
}

// admit returns how many messages the claim about to run may take and its
// epoch. With wait (no messages claimed ahead wait to be handed over) it
// waits until that is at least one: for room in flight (a whole batch while
// backlogged, see inflight.waitRoom), then for the topic's flow control (a
// held topic). Without, it does not wait and may admit none. ok is false
// when ctx ended.
func (g *claimBudget) admit(ctx context.Context, wait, backlogged bool) (p permit, ok bool) {
	var limit int
	batch, most := g.sizes(backlogged)
	if wait {
		if limit, p.epoch, ok = g.in.waitRoom(ctx, batch, most, backlogged); !ok {
			return p, false
		}
	} else if limit, p.epoch = g.in.room(batch, most); ctx.Err() != nil {
		return p, false
	}
	if limit <= 0 {
		return p, true
	}
	epoch := p.epoch
	p, ok = g.flowRoom(ctx, limit, wait)
	p.epoch = epoch
	return p, ok
}

// sizes are the most one claim takes and the most in flight: batch and
// most, or on a fair topic as many batches of the paced size, and one while
// the slot is backlogged (pace.go).
func (g *claimBudget) sizes(backlogged bool) (batch, most int) {
	if g.pace == nil {
		return g.batch, g.most
	}
	b := g.pace.batch(g.batch)
	if backlogged {
		return b, b
	}
	return b, g.most / g.batch * b
}

// flowRoom is admit's flow control part, a permit without its epoch: how
// many of limit the topic's limits let the claim take (n), how many of them
// the rate limiter granted, and whether it is asked after the claim
// instead. ok is false when ctx ended.
func (g *claimBudget) flowRoom(ctx context.Context, limit int, wait bool) (p permit, ok bool) {
	ft := g.flow
	if !ft.limited() {
		return permit{n: limit}, true
	}
	after := !g.rateBound && ft.rateNow() > 0
	var since time.Time
	why := ""
	defer func() {
		if !since.IsZero() {
			g.unhold(why, since)
		}
	}()
	retry := backoff.New(backoff.Policy{Min: acquireRetryMin, Max: acquireRetryMax, Jitter: retryJitter})
	for {
		changed := ft.changes() // before the reads: a change after them wakes the wait
		room, r := ft.holdRoom(ctx, limit)
		d := depthInterval - time.Since(r.at)
		reason := heldQueue
		if room > 0 && after {
			return permit{n: room, after: true}, true
		}
		if room > 0 {
			var n, granted int
			n, granted, d = g.permits(ctx, room, retry)
			if n > 0 {
				ft.unclaimed(room - n)
				return permit{n: n, granted: granted}, true
			}
			ft.unclaimed(room)
			reason = heldRate
		}
		if !wait || ctx.Err() != nil {
			return permit{}, ctx.Err() == nil
		}
		if why != reason {
			if !since.IsZero() {
				g.unhold(why, since)
			}
			why, since = reason, g.hold(reason)
		}
		// The wait is bounded by the next read of the run-time limits, and
		// a change of limits ends it: a rate lowered, raised or lifted
		// takes effect within limitsInterval, never after the old limit's
		// wait (at 1e-9/s it was 31 years).
		if !sleep(ctx, min(max(d, time.Millisecond), limitsInterval), changed) {
			return permit{}, false
		}
	}
}

// permits asks the rate limiter for up to want permits (all of them when
// the topic has no rate limit). n is how many the claim may take, granted
// how many came from the limiter; when none, wait is how long until some.
func (g *claimBudget) permits(ctx context.Context, want int, retry *backoff.Backoff) (n, granted int, wait time.Duration) {
	rate := g.flow.rateNow()
	if rate <= 0 {
		return want, 0, 0
	}
	rctx, cancel := context.WithTimeout(ctx, redisTimeout)
	gr, err := g.fs.Acquire(rctx, g.topic, rate, want, g.owed)
	cancel()
	if err != nil {
		g.m.RedisErrs.WithLabelValues("acquire").Inc()
		d := retry.Next()
		g.health.failed(g.topic.Name, "asking the rate limit for permits failed; claiming nothing until it answers", err)
		return 0, 0, d
	}
	g.owed = 0
	retry.Reset()
	return gr.Permits, gr.Permits, gr.Wait
}

// takeBack settles a claim that p admitted: it took took messages and
// dead-lettered dead more (claimed false: the claim failed). It gives the
// queue depth limit back the room the claim did not keep and the rate
// limit the permits it did not use (owed). For a claim admitted with
// p.after it asks the rate limit for the took messages, with the permits
// owed; refused is how many of them (the claim's tail) it did not grant:
// the caller puts them back. A failed Acquire refuses them all.
func (g *claimBudget) takeBack(ctx context.Context, p permit, took, dead int, claimed bool) (refused int) {
	if g.pace != nil && claimed {
		g.pace.claimed(took+dead, p.n, time.Now())
	}
	switch {
	case !claimed:
		g.flow.unclaimed(p.n)
		g.owed += p.granted
		return 0
	case !p.after:
		used := took + dead
		g.flow.unclaimed(p.n - used)
		if back := min(p.granted, p.n-used); back > 0 {
			g.owed += back
		}
		return 0
	}
	granted := took
	if took > 0 || g.owed > 0 {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
		gr, err := g.fs.Acquire(rctx, g.topic, g.flow.rateNow(), took, g.owed)
		cancel()
		if err != nil {
			g.m.RedisErrs.WithLabelValues("acquire").Inc()
			g.log.Warn("asking the rate limit for permits failed; the claim goes back", "err", err)
			granted = 0
		} else {
			g.owed, granted = 0, gr.Permits
		}
	}
	g.flow.unclaimed(p.n - granted - dead)
	if granted >= took {
		return 0
	}
	g.rateBound = true
	return took - granted
}

// rest gives the permits the slot owes back to the rate limiter, one round
// trip, before the scanner naps or stops (unused, they would lower the
// topic's rate until the window forgets them), and lets the next claim run
// first again: what was due is drained.
func (g *claimBudget) rest(ctx context.Context) {
	g.rateBound = false
	back, rate := g.owed, g.flow.rateNow()
	g.owed = 0
	if back <= 0 || rate <= 0 {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
	_, err := g.fs.Acquire(rctx, g.topic, rate, 0, back)
	cancel()
	if err != nil {
		g.m.RedisErrs.WithLabelValues("acquire").Inc()
		g.log.Debug("giving unused permits back failed; the limit's share of them is lost", "count", back, "err", err)
	}
}

// hold records that the scanner starts waiting for its topic's flow
// control, for reason; unhold that it stopped.
func (g *claimBudget) hold(reason string) time.Time {
	g.flow.sawHeld(reason)
	if g.flow.heldBy(reason).Add(1) == 1 {
		g.m.Held.WithLabelValues(g.topic.Name, reason).Set(1)
	}
	return time.Now()
}

func (g *claimBudget) unhold(reason string, since time.Time) {
	if g.flow.heldBy(reason).Add(-1) == 0 {
		g.m.Held.WithLabelValues(g.topic.Name, reason).Set(0)
	}
	if !g.paused {
		g.m.HeldSeconds.WithLabelValues(g.topic.Name, reason).Add(time.Since(since).Seconds())
	}
}
