package kafka

import (
	"context"
	"fmt"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/delaybridge/delaybridge/sinks"
)

const (
	// pingTTL is how long a successful Ping answer is reused: the
	// forwarder and /readyz may ask often, a broker need not hear of it
	// every time. An acknowledged produce request counts as one.
	pingTTL = time.Second
	// pingErrTTL is how long a failed answer is reused: short, since the
	// forwarder claims nothing until Ping succeeds, so a broker that came
	// back is noticed at the scanners' next poll.
	pingErrTTL = 100 * time.Millisecond
	// pingTimeout bounds one check.
	pingTimeout = 2 * time.Second
)

type pingCache struct {
	mu  sync.Mutex // held during a check: concurrent callers share it
	at  time.Time
	err error
}

// Ping reports whether a broker answers: an ApiVersions round trip over the
// sink's own connection pool (so TLS and SASL are checked too), at most one
// per second while the brokers answer (produce requests acknowledged in the
// last second answer for them), ten per second while they do not. Its errors wrap sinks.ErrNotConnected, and sinks.ErrAuth too
// when the brokers refuse the SASL credentials.
func (s *Sink) Ping(ctx context.Context) error {
	if !s.latch.Enter() {
		return sinks.NotConnected(sinks.ErrClosed)
	}
	defer s.latch.Leave()
	s.ping.mu.Lock()
	defer s.ping.mu.Unlock()
	if ttl := pingTTL; !s.ping.at.IsZero() {
		if s.ping.err != nil {
			ttl = pingErrTTL
		}
		if time.Since(s.ping.at) < ttl {
			return s.ping.err
		}
	}
	err := s.checkBroker(ctx)
	if ctx.Err() != nil {
		// The caller gave up: that says nothing about the broker.
		return fmt.Errorf("ping kafka: %w", sinks.NotConnected(ctx.Err()))
	}
	s.ping.at, s.ping.err = time.Now(), err
	return err
}

// answered records that a broker acknowledged a request: Ping need not ask.
// It does not wait for a Ping under way.
func (c *pingCache) answered() {
	if !c.mu.TryLock() {
		return
	}
	defer c.mu.Unlock()
	c.at, c.err = time.Now(), nil
}

func (s *Sink) checkBroker(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	c := &kafkago.Client{Addr: s.addr, Transport: s.transport, Timeout: pingTimeout}
	res, err := c.ApiVersions(ctx, &kafkago.ApiVersionsRequest{})
	if err == nil && res.Error != nil {
		err = res.Error
	}
	if err != nil {
		return s.unreachable(fmt.Sprintf("ping kafka brokers %v", s.cfg.Brokers), err)
	}
	return nil
}
