package forwarder

import (
	"context"
	"errors"
	"time"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// deliver publishes one claimed batch and records every message's outcome in
// Redis: confirmed ones are acked, connection losses released, broker
// refusals retried or dead-lettered. ctx is the drain context: it ends only
// when the shutdown timeout passed.
func (s *scanner) deliver(ctx context.Context, b batch) {
	name := s.topic.Name
	msgs := make([]sinks.Message, 0, len(b.claimed))
	members := make([]string, 0, len(b.claimed))
	var failures []queue.Failure
	for _, c := range b.claimed {
		dm, err := s.topic.Decode(c.Member)
		if err != nil {
			failures = append(failures, queue.Failure{Member: c.Member, Permanent: true, Reason: err.Error()})
			continue
		}
		m := sinks.Message{
			ID:         dm.ID,
			Topic:      name,
			Body:       dm.Body,
			Due:        c.DueTime(),
			Attempt:    c.Attempts + 1,
			Headers:    dm.Headers,
			RoutingKey: dm.RoutingKey,
		}
		if dm.RoutingKey != "" {
			m.Key = []byte(dm.RoutingKey)
		}
		msgs = append(msgs, m)
		members = append(members, c.Member)
	}

	var results []error
	if len(msgs) > 0 {
		start := time.Now()
		err := s.topic.Sink.Publish(ctx, msgs)
		confirmed := time.Now()
		s.f.m.Latency.WithLabelValues(name).Observe(confirmed.Sub(start).Seconds())
		results = sinks.Results(err, len(msgs))
		lateness := s.f.m.Lateness.WithLabelValues(name)
		redisNow := confirmed.Add(b.skew)
		for i, e := range results {
			if e == nil {
				lateness.Observe(redisNow.Sub(msgs[i].Due).Seconds())
			}
		}
	}

	var acks, releases []string
	for i, e := range results {
		switch {
		case e == nil:
			acks = append(acks, members[i])
		case errorsIsAny(e, sinks.ErrNotConnected, sinks.ErrClosed, context.Canceled, context.DeadlineExceeded):
			// Not the message's fault: no attempt is used.
			releases = append(releases, members[i])
			s.f.m.Failures.WithLabelValues(name, outcome(e)).Inc()
		default:
			permanent := errors.Is(e, sinks.ErrPermanent)
			failures = append(failures, queue.Failure{
				Member:    members[i],
				Backoff:   s.f.backoff(msgs[i].Attempt),
				Permanent: permanent,
				Reason:    e.Error(),
			})
			s.f.m.Failures.WithLabelValues(name, outcome(e)).Inc()
		}
	}
	s.record(ctx, acks, releases, failures)
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

// record writes the outcomes to Redis, retrying for a while when Redis is
// unreachable. What cannot be written stays in flight: the reaper returns it
// once the lease expires (a duplicate, never a loss).
func (s *scanner) record(ctx context.Context, acks, releases []string, failures []queue.Failure) {
	name := s.topic.Name
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
		s.log.Warn("publish failed on the connection; returned without an attempt", "count", len(releases))
	}
	for _, fl := range failures {
		var out queue.Outcome
		s.redisRetry(ctx, "retry", func(c context.Context) error {
			var err error
			out, err = s.f.q.Retry(c, t, s.slot, fl, s.f.opt.MaxAttempts)
			return err
		})
		switch out {
		case queue.Retrying:
			s.f.m.Retried.WithLabelValues(name).Inc()
			s.log.Info("publish failed, will retry", "err", fl.Reason, "backoff", fl.Backoff)
		case queue.Dead:
			s.f.m.Dead.WithLabelValues(name).Inc()
			s.log.Warn("message dead-lettered", "err", fl.Reason, "permanent", fl.Permanent)
		}
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

// ping asks a sink that can tell whether it is connected.
func ping(ctx context.Context, s sinks.Sink) error {
	p, ok := s.(sinks.Pinger)
	if !ok {
		return nil
	}
	return p.Ping(ctx)
}
