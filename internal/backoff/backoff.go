// Package backoff owns delaybridge's one retry schedule: exponential growth
// from a minimum to a cap, with optional jitter so a fleet of replicas that
// failed together does not retry in lockstep.
//
// A Policy is the schedule, and Policy.Delay its pure n-th step; a Backoff
// walks a Policy for one retry loop (Next, then Reset after a success).
package backoff

import (
	"math"
	"math/rand/v2"
	"time"
)

// DefaultFactor is the growth per step when Policy.Factor is zero.
const DefaultFactor = 2

// Policy is an exponential back-off schedule.
type Policy struct {
	// Min is the first delay.
	Min time.Duration
	// Max caps every delay, jittered or not; a Max below Min wins.
	Max time.Duration
	// Factor multiplies the delay per step; zero means DefaultFactor.
	Factor float64
	// Jitter is the fraction, in [0, 1], by which a delay may be shortened
	// at random: a delay d becomes uniform in [d×(1−Jitter), d]. Zero
	// means none (the schedule is deterministic). Jitter only shortens, so
	// Max stays a hard cap.
	Jitter float64
}

// Delay is the delay before retry n (0-based): Min×Factor^n capped at
// Max, then jittered. A negative n is taken as 0.
func (p Policy) Delay(n int) time.Duration {
	return p.jitter(p.step(n))
}

// step is Delay without the jitter.
func (p Policy) step(n int) time.Duration {
	factor := p.Factor
	if factor == 0 {
		factor = DefaultFactor
	}
	d := float64(p.Min) * math.Pow(factor, float64(max(n, 0)))
	if d >= float64(p.Max) { // also when the power overflowed to +Inf
		return p.Max
	}
	return time.Duration(d)
}

func (p Policy) jitter(d time.Duration) time.Duration {
	j := min(max(p.Jitter, 0), 1)
	spread := time.Duration(float64(d) * j)
	if spread <= 0 {
		return d
	}
	return d - rand.N(spread+1)
}

// Backoff walks a Policy: each Next is the following step. The zero value
// of its state starts at Min. It is not safe for concurrent use: each retry
// loop has its own.
type Backoff struct {
	Policy
	n int
}

// New returns a Backoff at the start of p.
func New(p Policy) *Backoff { return &Backoff{Policy: p} }

// Next returns the delay before the next retry and advances the schedule.
func (b *Backoff) Next() time.Duration {
	d := b.Delay(b.n)
	if b.step(b.n) < b.Max {
		b.n++ // once at the cap, stay there without counting on
	}
	return d
}

// Reset starts the schedule over at Min, after a success.
func (b *Backoff) Reset() { b.n = 0 }
