package forwarder

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// delivery is one claimed batch on its way through the pipeline.
type delivery struct {
	b        batch
	msgs     []sinks.Message
	members  []string        // members[i] carries msgs[i]
	failures []queue.Failure // members that did not decode
	unsent   bool            // returned without publishing (slot order)

	began   time.Time
	done    <-chan struct{}
	result  func() error
	results []error // the sink's answer per message, once awaited
}

// closed is a done channel for answers known at once.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// prepare decodes a claimed batch into the messages to publish.
func (s *scanner) prepare(b batch) *delivery {
	d := &delivery{b: b, msgs: make([]sinks.Message, 0, len(b.claimed)), members: make([]string, 0, len(b.claimed))}
	for _, c := range b.claimed {
		dm, err := s.topic.Decode(c.Member)
		if err != nil {
			d.failures = append(d.failures, queue.Failure{Member: c.Member, Permanent: true, Reason: err.Error()})
			continue
		}
		m := sinks.Message{
			ID:         dm.ID,
			Topic:      s.topic.Name,
			Body:       dm.Body,
			Due:        c.DueTime(),
			Attempt:    c.Attempts + 1,
			Headers:    dm.Headers,
			RoutingKey: dm.RoutingKey,
		}
		if dm.RoutingKey != "" {
			m.Key = []byte(dm.RoutingKey)
		}
		d.msgs = append(d.msgs, m)
		d.members = append(d.members, c.Member)
	}
	return d
}

// finish records an answer known without waiting.
func (d *delivery) finish(err error) {
	d.done = closed
	d.result = func() error { return err }
}

// answered reports whether the sink has answered for every message.
func (d *delivery) answered() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// start hands d to the sink: a sinks.Starter returns once the batch is sent,
// any other sink once it is confirmed.
func (s *scanner) start(ctx context.Context, d *delivery) {
	d.began = time.Now()
	if len(d.msgs) == 0 {
		d.finish(nil)
		return
	}
	if st, ok := s.topic.Sink.(sinks.Starter); ok {
		d.done, d.result = st.Start(ctx, d.msgs)
		return
	}
	err := s.topic.Sink.Publish(ctx, d.msgs)
	d.finish(err)
	if err != nil && connectionLost(sinks.Results(err, len(d.msgs))) {
		s.in.breakOrder() // before the next batch is published
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

// ping asks a sink that can tell whether it is connected.
func ping(ctx context.Context, s sinks.Sink) error {
	p, ok := s.(sinks.Pinger)
	if !ok {
		return nil
	}
	return p.Ping(ctx)
}
