package forwarder

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// maxGroup is the most messages whose Redis records one write combines.
const maxGroup = 2000

// ackDelay is how long confirmed messages may wait to be acked, so that a
// trickle of small batches takes one Redis round trip every few
// milliseconds instead of one per batch. They stay in flight meanwhile: a
// crash in this window costs a duplicate after the lease, never a loss. A
// claimer waiting for room has them acked at once.
const ackDelay = 20 * time.Millisecond

// settleLoop waits for each delivery's answer in order and records the
// outcomes in Redis. Fully confirmed deliveries are held for up to ackDelay
// and acked together; any other outcome is recorded at once, with the acks
// held before it.
func (s *scanner) settleLoop(ctx context.Context, sent <-chan *delivery) {
	var held []*delivery
	heldN := 0
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	timing := false
	flush := func() {
		if len(held) > 0 {
			s.record(ctx, held)
			s.in.settle(heldN)
			held, heldN = nil, 0
		}
		if timing {
			timer.Stop()
			timing = false
		}
	}
	for {
		var d *delivery
		select {
		case next, ok := <-sent:
			if !ok {
				flush()
				return
			}
			d = next
		case <-timer.C:
			timing = false
			flush()
			continue
		case <-s.in.wanted:
			flush()
			continue
		}
		// Wait for d's answer; held acks are due meanwhile too.
		for waiting := true; waiting; {
			select {
			case <-d.done:
				waiting = false
			case <-ctx.Done():
				waiting = false
			case <-timer.C:
				timing = false
				flush()
			case <-s.in.wanted:
				flush()
			}
		}
		s.await(ctx, d)
		held = append(held, d)
		heldN += len(d.b.claimed)
		if !d.confirmed() || heldN >= maxGroup {
			flush()
			continue
		}
		if !timing {
			timer.Reset(ackDelay)
			timing = true
		}
	}
}

// await waits for the sink's answer about d (or the end of the drain
// context) and observes the publish metrics.
func (s *scanner) await(ctx context.Context, d *delivery) {
	var err error
	select {
	case <-d.done:
		err = d.result()
	case <-ctx.Done():
		err = fmt.Errorf("wait for broker confirms: %w", ctx.Err())
	}
	if len(d.msgs) == 0 || d.unsent {
		return
	}
	d.results = sinks.Results(err, len(d.msgs))
	if err != nil && connectionLost(d.results) {
		s.in.breakOrder() // the batches claimed after this one go back too
	}
	name := s.topic.Name
	confirmed := time.Now()
	s.f.m.Latency.WithLabelValues(name).Observe(confirmed.Sub(d.began).Seconds())
	lateness := s.f.m.Lateness.WithLabelValues(name)
	redisNow := confirmed.Add(d.b.skew)
	for i, e := range d.results {
		if e == nil {
			lateness.Observe(redisNow.Sub(d.msgs[i].Due).Seconds())
		}
	}
}

// confirmed reports whether every message of d was confirmed (and none
// failed to decode), so all that is left is to ack them.
func (d *delivery) confirmed() bool {
	if d.unsent || len(d.failures) > 0 {
		return false
	}
	for _, e := range d.results {
		if e != nil {
			return false
		}
	}
	return true
}

// connectionLost reports whether a result says the connection, not the
// message, failed: such messages go back without an attempt.
func connectionLost(results []error) bool {
	for _, e := range results {
		if e != nil && isConnectionLoss(e) {
			return true
		}
	}
	return false
}

func isConnectionLoss(err error) bool {
	return errorsIsAny(err, sinks.ErrNotConnected, sinks.ErrClosed, context.Canceled, context.DeadlineExceeded)
}

func outcome(err error) string {
	switch {
	case errors.Is(err, sinks.ErrPermanent):
		return "permanent"
	case errorsIsAny(err, sinks.ErrNotConnected, sinks.ErrClosed):
		return "connection"
	case errorsIsAny(err, context.Canceled, context.DeadlineExceeded):
		return "timeout"
	default:
		return "broker"
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

// record writes the outcomes of a group of awaited deliveries to Redis:
// confirmed ones are acked (in one call), connection losses and unsent
// batches released, broker refusals retried or dead-lettered. It retries
// for a while when Redis is unreachable; what cannot be written stays in
// flight and the reaper returns it once the lease expires (a duplicate,
// never a loss).
func (s *scanner) record(ctx context.Context, group []*delivery) {
	name := s.topic.Name
	var acks, releases []string
	var failures []queue.Failure
	unsent := 0
	defer func() {
		for _, d := range group {
			s.leases.drop(d.b.lease)
		}
	}()
	for _, d := range group {
		failures = append(failures, d.failures...)
		if d.unsent {
			releases = append(releases, d.members...)
			unsent += len(d.members)
			continue
		}
		for i, e := range d.results {
			switch {
			case e == nil:
				acks = append(acks, d.members[i])
			case isConnectionLoss(e):
				// Not the message's fault: no attempt is used.
				releases = append(releases, d.members[i])
				s.f.m.Failures.WithLabelValues(name, outcome(e)).Inc()
			default:
				failures = append(failures, queue.Failure{
					Member:    d.members[i],
					Backoff:   s.f.backoff(d.msgs[i].Attempt),
					Permanent: errors.Is(e, sinks.ErrPermanent),
					Reason:    e.Error(),
				})
				s.f.m.Failures.WithLabelValues(name, outcome(e)).Inc()
			}
		}
	}

	t := s.topic.Topic
	if len(acks) > 0 {
		s.redisRetry(ctx, "ack", func(c context.Context) error {
			_, err := s.f.q.Ack(c, t, s.slot, acks)
			return err
		})
		s.f.m.Published.WithLabelValues(name).Add(float64(len(acks)))
	}
	if len(releases) > 0 {
		s.redisRetry(ctx, "release", func(c context.Context) error {
			_, err := s.f.q.Release(c, t, s.slot, releases)
			return err
		})
		s.f.m.Released.WithLabelValues(name).Add(float64(len(releases)))
		if lost := len(releases) - unsent; lost > 0 {
			s.log.Warn("publish failed on the connection; returned without an attempt", "count", lost)
		}
		if unsent > 0 {
			s.log.Info("returned unpublished after an earlier batch went back, to keep the slot's order", "count", unsent)
		}
	}
	// One log line per outcome and batch: a refusal storm must not flood
	// the logs with a line per message.
	var retried, dead int
	var retryReason, deadReason string
	for _, fl := range failures {
		var out queue.Outcome
		s.redisRetry(ctx, "retry", func(c context.Context) error {
			var err error
			out, err = s.f.q.Retry(c, t, s.slot, fl, s.f.opt.MaxAttempts)
			return err
		})
		switch out {
		case queue.Retrying:
			retried++
			retryReason = fl.Reason
		case queue.Dead:
			dead++
			deadReason = fl.Reason
		}
	}
	if retried > 0 {
		s.f.m.Retried.WithLabelValues(name).Add(float64(retried))
		s.log.Info("publish failed, will retry", "count", retried, "err", retryReason)
	}
	if dead > 0 {
		s.f.m.Dead.WithLabelValues(name).Add(float64(dead))
		s.log.Warn("messages dead-lettered", "count", dead, "err", deadReason)
	}
}

// redisRetry runs op until it succeeds, giving up after half a lease (the
// reaper takes over from there) or when ctx ends.
func (s *scanner) redisRetry(ctx context.Context, op string, fn func(context.Context) error) {
	giveUp := time.Now().Add(s.f.opt.Lease / 2)
	wait := 20 * time.Millisecond
	for {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
		err := fn(c)
		cancel()
		if err == nil {
			return
		}
		s.f.m.RedisErrs.WithLabelValues(op).Inc()
		if time.Now().After(giveUp) || ctx.Err() != nil {
			s.log.Error("redis write failed; the reaper will return these messages after their lease", "op", op, "err", err)
			return
		}
		s.log.Warn("redis write failed, retrying", "op", op, "err", err)
		if !sleep(ctx, wait, nil) {
			return
		}
		wait = min(wait*2, time.Second)
	}
}
