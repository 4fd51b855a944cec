package forwarder

import (
	"context"
	"time"
)

// clock is a scanner's local time: when it claims, naps, renews leases and
// gives up releasing. The daemon's is the wall clock (wallClock); the unit
// tests give a fake one they move by hand, so renewing leases and napping
// until a due time are tested without sleeping (clock_test.go). Redis's
// clock stays Redis's (redisClock reads it from this one). The loops beside
// the scanners (reaper, backlog, limits, ownership, …), the claim budget's
// flow-control waits, the settler's wait before a grouped ack (ackDelay)
// and the reaper schedule a scanner notes run on the wall clock.
type clock interface {
	Now() time.Time
	// NewTimer fires once, d from now; NewTicker every d.
	NewTimer(d time.Duration) timer
	NewTicker(d time.Duration) ticker
}

// timer is a time.Timer as a clock gives it.
type timer interface {
	C() <-chan time.Time
	Stop() bool
}

// ticker is a time.Ticker as a clock gives it.
type ticker interface {
	C() <-chan time.Time
	Stop()
}

// wallClock is the time package's clock.
type wallClock struct{}

func (wallClock) Now() time.Time                   { return time.Now() }
func (wallClock) NewTimer(d time.Duration) timer   { return wallTimer{time.NewTimer(d)} }
func (wallClock) NewTicker(d time.Duration) ticker { return wallTicker{time.NewTicker(d)} }

type wallTimer struct{ t *time.Timer }

func (w wallTimer) C() <-chan time.Time { return w.t.C }
func (w wallTimer) Stop() bool          { return w.t.Stop() }

type wallTicker struct{ t *time.Ticker }

func (w wallTicker) C() <-chan time.Time { return w.t.C }
func (w wallTicker) Stop()               { w.t.Stop() }

// sleep waits for d on the wall clock, a wake-up or the end of ctx; false
// when ctx ended.
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	_, ok := sleepOrWake(ctx, wallClock{}, d, wake)
	return ok
}

// sleep waits for d on the scanner's clock or the end of ctx; false when
// ctx ended.
func (s *scanner) sleep(ctx context.Context, d time.Duration) bool {
	_, ok := sleepOrWake(ctx, s.clock, d, nil)
	return ok
}

// sleepOrWake waits for d on c or a wake-up (woken true); ok is false when
// ctx ended.
func sleepOrWake(ctx context.Context, c clock, d time.Duration, wake <-chan struct{}) (woken, ok bool) {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return false, true
	case <-wake:
		return true, true
	case <-ctx.Done():
		return false, false
	}
}
