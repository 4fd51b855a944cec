package forwarder

import (
	"context"
	"time"

	"github.com/delaybridge/delaybridge/internal/backoff"
)

// Every stage of the pipeline writes to Redis the same way, with the two
// helpers here: redisRetry for one write, release for members that go back
// to the scheduled set without an attempt. They sit beside the stages, not
// in one of them, so no stage calls into a later one.

// A failed Redis write is retried after redisRetryMin, doubling up to
// redisRetryMax: a blip costs milliseconds, and an outage is not hammered.
// redisRetry gives up after half a lease.
const (
	redisRetryMin = 20 * time.Millisecond
	redisRetryMax = time.Second
)

// redisRetry runs op until it succeeds, giving up after half a lease (the
// reaper takes over from there) or when ctx ends; it reports whether op
// succeeded. Each try has redisTimeout and outlives ctx, so a write made
// during shutdown is tried once.
func (s *scanner) redisRetry(ctx context.Context, op string, fn func(context.Context) error) bool {
	giveUp := s.clock.Now().Add(s.cfg.Lease / 2)
	wait := backoff.New(backoff.Policy{Min: redisRetryMin, Max: redisRetryMax, Jitter: retryJitter})
	for {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
		err := fn(c)
		cancel()
		if err == nil {
			return true
		}
		s.m.RedisErrs.WithLabelValues(op).Inc()
		if s.clock.Now().After(giveUp) || ctx.Err() != nil {
			s.log.Error("redis write failed; the reaper will return these messages after their lease", "op", op, "err", err)
			return false
		}
		s.health.failed(s.topic.Name, "redis write failed, retrying", err)
		if !s.sleep(ctx, wait.Next()) {
			return false
		}
	}
}

// Why members go back without an attempt (release's why, in its logs).
const (
	// backRefused: the rate limit did not grant the tail of a claim.
	backRefused = "not granted by the rate limit"
	// backStopping: claimed ahead, not due yet when the scanner stopped.
	backStopping = "claimed ahead, not due when the scanner stopped"
	// backUnsettled: the connection lost them, or their batch went back
	// unpublished behind one it lost (slot order).
	backUnsettled = "not confirmed"
)

// release returns members to the scheduled set at their due times, without
// an attempt, and counts them released once Redis has them. Every stage
// puts members back through it, with one error policy: redisRetry's (for
// half a lease, once after ctx ended); members it could not put back stay
// in flight, and the reaper returns them after their lease (counted
// reaped). It reports whether they went back. The caller settles them out
// of flight (inflight.settle), as it does for every other outcome.
func (s *scanner) release(ctx context.Context, members []string, why string) bool {
	if len(members) == 0 {
		return true
	}
	ok := s.redisRetry(ctx, "release", func(c context.Context) error {
		_, err := s.store.Release(c, s.topic.Topic, s.key.slot, members)
		return err
	})
	if !ok {
		s.log.Warn("putting messages back failed; the reaper returns them after their lease", "count", len(members), "why", why)
		return false
	}
	s.m.Released.WithLabelValues(s.topic.Name).Add(float64(len(members)))
	return true
}
