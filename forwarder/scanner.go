package forwarder

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// redisTimeout bounds one Redis call made outside the scanner's own context
// (claims, acks, releases during shutdown): it must not hang forever, and a
// call cut short by shutdown would leave claimed messages to the reaper.
const redisTimeout = 5 * time.Second

// scanner claims and publishes the due messages of one topic×slot.
type scanner struct {
	f     *Forwarder
	topic Topic
	slot  int
	wake  <-chan struct{}
	log   *slog.Logger
}

// batch is one claim handed from the scanner to its publisher.
type batch struct {
	claimed []queue.Claimed
	// skew is Redis's clock minus the local clock at the claim, so lateness
	// is measured against the clock that decided the message was due.
	skew time.Duration
}

func (f *Forwarder) newScanner(k slotKey, wake <-chan struct{}) *scanner {
	t := f.opt.Topics[k.topic]
	return &scanner{
		f:     f,
		topic: t,
		slot:  k.slot,
		wake:  wake,
		log:   f.log.With("topic", t.Name, "slot", k.slot),
	}
}

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

	tokens := make(chan struct{}, opt.MaxInflightBatches)
	work := make(chan batch, opt.MaxInflightBatches)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := range work {
			s.deliver(drain, b)
			<-tokens
		}
	}()
	s.claimLoop(ctx, tokens, work)
	close(work)
	<-done
}

func (s *scanner) claimLoop(ctx context.Context, tokens chan struct{}, work chan<- batch) {
	opt := &s.f.opt
	errWait := 50 * time.Millisecond
	for ctx.Err() == nil {
		if !s.waitSink(ctx) {
			return
		}
		select {
		case tokens <- struct{}{}:
		case <-ctx.Done():
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
		before := time.Now()
		c, err := s.f.q.Claim(cctx, s.topic.Topic, s.slot, opt.BatchSize, opt.Lease)
		after := time.Now()
		cancel()
		if err != nil {
			<-tokens
			s.f.m.RedisErrs.WithLabelValues("claim").Inc()
			s.log.Warn("claim failed", "err", err, "retry_in", errWait)
			sleep(ctx, errWait, nil)
			errWait = min(errWait*2, opt.PollInterval, 2*time.Second)
			continue
		}
		errWait = 50 * time.Millisecond
		if n := len(c.Messages); n > 0 {
			s.f.m.Claimed.WithLabelValues(s.topic.Name).Add(float64(n))
			mid := before.Add(after.Sub(before) / 2)
			work <- batch{claimed: c.Messages, skew: c.Now.Sub(mid)}
		} else {
			<-tokens
		}
		if len(c.Messages) >= opt.BatchSize {
			continue // more may be due already
		}
		wait := opt.PollInterval
		if c.HasNext {
			now := float64(c.Now.UnixMilli())
			untilNext := time.Duration(math.Ceil(c.Next-now)) * time.Millisecond
			wait = min(wait, untilNext)
		}
		if wait <= 0 {
			continue
		}
		sleep(ctx, wait, s.wake)
	}
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
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-wake:
		return true
	case <-ctx.Done():
		return false
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
