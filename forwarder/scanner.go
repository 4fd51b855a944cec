package forwarder

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// redisTimeout bounds one Redis call made outside the scanner's own context
// (claims, acks, releases during shutdown): it must not hang forever, and a
// call cut short by shutdown would leave claimed messages to the reaper.
const redisTimeout = 5 * time.Second

// scanner claims and publishes the due messages of one topic×slot.
//
// Its pipeline: the claimer (run) claims batches in score order and starts
// publishing each in that order, and the settler waits for the broker's
// answers in that order and records them in Redis. A sink that can start a
// publish without waiting for its confirms (sinks.Starter) gets batch k+1
// while the broker still confirms batch k; any other sink is published to
// by a goroutine of its own between the two, so the claimer still claims
// ahead. The claimed messages not yet settled are capped (see inflight), so
// a slow broker slows claiming instead of moving the backlog into flight.
type scanner struct {
	f     *Forwarder
	topic Topic
	slot  int
	alarm *alarm
	in    *inflight
	// leases are the claimed batches whose leases keepLeases renews.
	leases *leases
	log    *slog.Logger
}

// batch is one claim handed from the claimer to the publisher.
type batch struct {
	claimed []queue.Claimed
	// skew is Redis's clock minus the local clock at the claim, so lateness
	// is measured against the clock that decided the message was due.
	skew time.Duration
	// epoch is the inflight epoch the claim was made in.
	epoch uint64
	// lease is the batch's handle in the scanner's leases.
	lease uint64
}

func (f *Forwarder) newScanner(k slotKey, a *alarm) *scanner {
	t := f.opt.Topics[k.topic]
	return &scanner{
		f:      f,
		topic:  t,
		slot:   k.slot,
		alarm:  a,
		in:     newInflight(),
		leases: newLeases(),
		log:    f.log.With("topic", t.Name, "slot", k.slot),
	}
}

// pipelineDepth is how many batches may wait between two stages of the
// pipeline; the inflight cap is what bounds the messages.
const pipelineDepth = 64

// run claims until ctx ends, then lets the batches already claimed finish
// within the shutdown timeout; what is not confirmed by then is returned.
func (s *scanner) run(ctx context.Context) {
	opt := &s.f.opt
	// In-flight batches outlive ctx by at most the shutdown timeout.
	drain, cancelDrain := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelDrain()
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-ctx.Done():
		case <-finished:
			return
		}
		t := time.NewTimer(opt.ShutdownTimeout)
		defer t.Stop()
		select {
		case <-t.C:
			cancelDrain()
		case <-finished:
		}
	}()

	sent := make(chan *delivery, pipelineDepth)
	done := make(chan struct{})
	keepCtx, stopKeeping := context.WithCancel(drain)
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		s.keepLeases(keepCtx)
	}()
	defer func() { stopKeeping(); <-kept }()
	go func() {
		defer close(done)
		s.settleLoop(drain, sent)
	}()
	if _, ok := s.topic.Sink.(sinks.Starter); ok {
		// Starting a publish does not wait for the broker, so the claimer
		// starts its batches itself: one goroutine hop less per batch.
		s.claimLoop(ctx, func(b batch) { sent <- s.publish(drain, b) })
		close(sent)
	} else {
		work := make(chan batch, pipelineDepth)
		go func() {
			defer close(sent)
			for b := range work {
				sent <- s.publish(drain, b)
			}
		}()
		s.claimLoop(ctx, func(b batch) { work <- b })
		close(work)
	}
	<-done
}

// claimLoop claims batches in score order and hands each to handoff, until
// ctx ends.
func (s *scanner) claimLoop(ctx context.Context, handoff func(batch)) {
	opt := &s.f.opt
	errWait := 50 * time.Millisecond
	backlogged := false // the last claim was full: more is due
	for ctx.Err() == nil {
		if !s.waitSink(ctx) {
			return
		}
		limit, epoch, ok := s.in.waitRoom(ctx, opt.BatchSize, opt.MaxInflightBatches*opt.BatchSize, backlogged)
		if !ok {
			return
		}
		s.alarm.reset()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
		before := time.Now()
		c, err := s.f.q.Claim(cctx, s.topic.Topic, s.slot, limit, opt.Lease)
		after := time.Now()
		cancel()
		if err != nil {
			s.f.m.RedisErrs.WithLabelValues("claim").Inc()
			s.log.Warn("claim failed", "err", err, "retry_in", errWait)
			sleep(ctx, errWait, nil)
			errWait = min(errWait*2, opt.PollInterval, 2*time.Second)
			continue
		}
		errWait = 50 * time.Millisecond
		skew := c.Now.Sub(before.Add(after.Sub(before) / 2))
		if n := len(c.Messages); n > 0 {
			s.f.m.Claimed.WithLabelValues(s.topic.Name).Add(float64(n))
			s.in.add(n)
			handoff(batch{claimed: c.Messages, skew: skew, epoch: epoch, lease: s.leases.hold(c.Messages, before)})
		}
		if backlogged = len(c.Messages) >= limit; backlogged {
			continue // more may be due already
		}
		// Look again when the next message falls due, at the latest after
		// the poll interval (a message scheduled earlier rings the alarm).
		target := redisMillis(c.Now) + float64(opt.PollInterval)/float64(time.Millisecond)
		if c.HasNext {
			target = min(target, c.Next)
		}
		if !s.nap(ctx, target, skew) {
			return
		}
	}
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

// redisMillis is t in Unix milliseconds, with its fraction.
func redisMillis(t time.Time) float64 {
	return float64(t.UnixNano()) / float64(time.Millisecond)
}

// waitSink blocks while the sink reports it is not connected, so nothing is
// claimed that could not be published. It returns false when ctx ended.
func (s *scanner) waitSink(ctx context.Context) bool {
	wait := 20 * time.Millisecond
	since := time.Now()
	logged := false
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
		// A sink still connecting at start-up is not worth a warning.
		if !logged && time.Since(since) > 2*time.Second {
			s.log.Warn("sink not connected, not claiming", "err", err)
			logged = true
		}
		if !sleep(ctx, wait, nil) {
			return false
		}
		wait = min(wait*2, time.Second)
	}
}

// sleep waits for d, a wake-up or the end of ctx; false when ctx ended.
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	_, ok := sleepOrWake(ctx, d, wake)
	return ok
}

// sleepOrWake waits for d or a wake-up (woken true); ok is false when ctx
// ended.
func sleepOrWake(ctx context.Context, d time.Duration, wake <-chan struct{}) (woken, ok bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false, true
	case <-wake:
		return true, true
	case <-ctx.Done():
		return false, false
	}
}

// errorsIsAny reports whether err matches any target.
func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
