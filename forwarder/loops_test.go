package forwarder

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// waitPasses waits, pass by pass of a service (its test signal p), until
// cond holds; it fails the test when within passes first.
func waitPasses(t *testing.T, p passes, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-p:
		case <-deadline.C:
			t.Fatalf("not within %s: %s", within, what)
		}
	}
}

// TestServicesRunUntilTheirContextEnds: the group starts every service and
// wait returns once each has returned after the context ended.
func TestServicesRunUntilTheirContextEnds(t *testing.T) {
	t.Parallel()
	var running atomic.Int32
	started := make(chan struct{}, 3)
	svc := serviceFunc(func(ctx context.Context) {
		running.Add(1)
		started <- struct{}{}
		<-ctx.Done()
		running.Add(-1)
	})
	ctx, cancel := context.WithCancel(context.Background())
	var g services
	g.start(ctx, svc, svc, svc)
	for range 3 {
		<-started
	}
	if n := running.Load(); n != 3 {
		t.Fatalf("%d services running, want 3", n)
	}
	cancel()
	g.wait()
	if n := running.Load(); n != 0 {
		t.Errorf("%d services still running after wait, want 0", n)
	}
}

// TestPassesSignalDoesNotBlockWithoutAReader: a service signals after each
// pass whether or not a test waits; a nil signal is a no-op.
func TestPassesSignalDoesNotBlockWithoutAReader(t *testing.T) {
	t.Parallel()
	var none passes
	none.signal()
	p := make(passes, 1)
	p.signal()
	p.signal() // dropped: one is pending already
	if len(p) != 1 {
		t.Errorf("%d signals pending, want 1", len(p))
	}
}
