package amqp

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/faultproxy"
	"github.com/delaybridge/delaybridge/sinks"
	"github.com/delaybridge/delaybridge/sinks/sinktest"
)

func newProxy(t *testing.T) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(context.Background(), brokerAddr(t))
	if err != nil {
		t.Fatalf("fault proxy: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// eventually polls cond until it holds, failing t after 30s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConnectionCutMidBatchLosesNothing(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	d := newDest(t, nil)
	c := d.consume(t)
	s := newSink(t, viaProxy(t, p.Addr()), d, 0)

	msgs := sinktest.Messages(2000)
	for i := range msgs {
		msgs[i].Body = append(msgs[i].Body, make([]byte, 2048)...)
	}
	// Slowed down, the batch is still in flight when the cut comes, after
	// the broker confirmed some of it.
	p.Slow(3 * time.Millisecond)
	sess, err := s.session()
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	result := make(chan error, 1)
	go func() { result <- publish(t, s, msgs) }()
	confirmed := func() uint64 {
		sess.tr.mu.Lock()
		defer sess.tr.mu.Unlock()
		return sess.tr.low - 1
	}
	deadline := time.Now().Add(30 * time.Second)
	for confirmed() < 100 {
		if time.Now().After(deadline) {
			t.Fatalf("no confirms within 30s")
		}
		time.Sleep(time.Millisecond)
	}
	p.Cut()
	var errs []error
	select {
	case err := <-result:
		errs = sinks.Results(err, len(msgs))
	case <-time.After(30 * time.Second):
		t.Fatalf("publish did not return within 30s of the cut")
	}
	var failed []sinks.Message
	for i, err := range errs {
		if err == nil {
			continue
		}
		if !errors.Is(err, sinks.ErrNotConnected) {
			t.Fatalf("message %d: %v, want nil or an error wrapping ErrNotConnected", i, err)
		}
		failed = append(failed, msgs[i])
	}
	if len(failed) == 0 || len(failed) == len(msgs) {
		t.Fatalf("the cut failed %d of %d messages: it did not come mid-batch", len(failed), len(msgs))
	}
	t.Logf("cut: %d of %d messages confirmed, %d failed", len(msgs)-len(failed), len(msgs), len(failed))

	// Down, the sink says so at once.
	eventually(t, "Ping fails", func() bool { return errors.Is(s.Ping(context.Background()), sinks.ErrNotConnected) })
	start := time.Now()
	if err := publish(t, s, msgs[:1]); !errors.Is(err, sinks.ErrNotConnected) {
		t.Fatalf("publish while cut: %v, want ErrNotConnected", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("publish while cut took %v, want at once", took)
	}

	p.Restore()
	waitConnected(t, s)
	for round := 0; len(failed) > 0; round++ {
		if round == 10 {
			t.Fatalf("%d messages still failing after 10 rounds", len(failed))
		}
		var still []sinks.Message
		for i, err := range sinks.Results(publish(t, s, failed), len(failed)) {
			if err != nil {
				still = append(still, failed[i])
			}
		}
		failed = still
	}

	// Everything arrives at least once; duplicates are allowed, losses not.
	seen := make(map[string]int, len(msgs))
	timeout := time.After(60 * time.Second)
	for len(seen) < len(msgs) {
		select {
		case dl := <-c.deliveries:
			seen[dl.MessageId]++
		case <-timeout:
			t.Fatalf("%d of %d messages delivered", len(seen), len(msgs))
		}
	}
	dups := 0
	for _, m := range msgs {
		dups += seen[m.ID] - 1
	}
	t.Logf("every message delivered, %d duplicates", dups)
}

func TestStalledBrokerHonoursTheContext(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	d := newDest(t, nil)
	s := newSink(t, viaProxy(t, p.Addr()), d, 0)

	p.Stall()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	err := s.Publish(ctx, sinktest.Messages(20))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("publish while stalled: %v, want an error wrapping context.DeadlineExceeded", err)
	}
	var be *sinks.BatchError
	if errors.As(err, &be) {
		t.Fatalf("publish while stalled reported per-message results: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("publish returned %v after its context ended", took-time.Second)
	}

	// The stalled messages may still arrive (at-least-once); the sink works on.
	p.Restore()
	waitConnected(t, s)
	msgs := sinktest.Messages(5)
	for i, err := range sinks.Results(publish(t, s, msgs), len(msgs)) {
		if err != nil && !errors.Is(err, sinks.ErrNotConnected) {
			t.Fatalf("message %d after the stall: %v", i, err)
		}
	}
}

// TestStalledBrokerIsNotAMissingExchange: a passive declare the broker does
// not answer is no news about the exchange: the check says the broker cannot
// be asked now (the daemon keeps its last result), not that the exchange is
// missing (the daemon's /readyz and its ERROR line said so during a stall).
func TestStalledBrokerIsNotAMissingExchange(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	d := newDest(t, nil)
	s := newSink(t, viaProxy(t, p.Addr()), d, 0)
	waitConnected(t, s)

	p.Stall()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := s.CheckDestination(ctx)
	if !errors.Is(err, sinks.ErrNotConnected) || errors.Is(err, sinks.ErrNoDestination) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("check while the broker is stalled: %v, want ErrNotConnected wrapping the deadline, not ErrNoDestination", err)
	}
	p.Restore()
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.CheckDestination(ctx); err != nil {
		t.Fatalf("check after the stall: %v", err)
	}
}

func TestCloseFailsMessagesWaitingForConfirms(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	d := newDest(t, nil)
	s := newSink(t, viaProxy(t, p.Addr()), d, 0)

	p.Stall()
	result := make(chan error, 1)
	go func() { result <- s.Publish(context.Background(), sinktest.Messages(10)) }()
	eventually(t, "the batch is in flight", func() bool {
		sess, err := s.session()
		return err == nil && sess.tr.len() == 10
	})
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-result:
		for i, e := range sinks.Results(err, 10) {
			if !errors.Is(e, sinks.ErrClosed) || !errors.Is(e, sinks.ErrNotConnected) {
				t.Errorf("message %d pending at Close: %v, want ErrClosed and ErrNotConnected", i, e)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("publish still waiting 30s after Close")
	}
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatalf("Close did not return with a stalled broker")
	}
}

func TestUnreachableBrokerIsNotAnErrorAtNew(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now

	start := time.Now()
	s, err := New(Config{URL: viaProxy(t, addr), ReconnectMin: 10 * time.Millisecond, ReconnectMax: 50 * time.Millisecond}, nil)
	if err != nil {
		t.Fatalf("new with an unreachable broker: %v", err)
	}
	defer func() { _ = s.Close() }()
	if took := time.Since(start); took > time.Second {
		t.Fatalf("New took %v", took)
	}
	if err := s.Ping(context.Background()); !errors.Is(err, sinks.ErrNotConnected) {
		t.Fatalf("ping: %v, want ErrNotConnected", err)
	}
	if err := publish(t, s, sinktest.Messages(3)); !errors.Is(err, sinks.ErrNotConnected) {
		t.Fatalf("publish: %v, want ErrNotConnected", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s.WaitConnected(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait connected: %v, want DeadlineExceeded", err)
	}
	start = time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := publish(t, s, sinktest.Messages(1)); !errors.Is(err, sinks.ErrClosed) {
		t.Fatalf("publish after close: %v, want ErrClosed", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("close while reconnecting took %v", took)
	}
}
