// Package procs runs the daemon's Go scheduler on one processor while the
// daemon uses less than most of one core, and on the runtime's default
// number of processors (GOMAXPROCS: the CPUs, or the container's CPU limit)
// while it needs more.
//
// With more than one processor the runtime starts a second thread looking
// for work ("spinning") each time a goroutine is woken while a processor is
// idle. The daemon's work in steady traffic is many small wake-ups (a timer
// per due message, a socket write, a confirm read, an ack), and on the
// development VM that search cost a quarter of its CPU: the steady bench
// (2,000 messages/s) took 215-222 µs of daemon CPU per message with
// GOMAXPROCS=2 and 160-178 µs with GOMAXPROCS=1, at the same lateness, and
// the burst was no slower on one processor (docs/performance.md).
//
// Setting GOMAXPROCS in the environment turns this off: the operator's
// choice stands.
package procs

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"time"
)

// Policy says when to change the number of processors.
type Policy struct {
	// Interval is how often the process's CPU use is sampled.
	Interval time.Duration
	// Raise: on one processor, a sample above this many cores returns to
	// the runtime's default at once.
	Raise float64
	// Lower: on the default, use below this many cores for LowerAfter moves
	// to one processor.
	Lower      float64
	LowerAfter time.Duration
}

// DefaultPolicy samples five times a second, takes the default processors as
// soon as one processor is three quarters busy, and returns to one after
// ten seconds of less than half a core (on one processor that use is about
// a third of it, well below the raise).
func DefaultPolicy() Policy {
	return Policy{Interval: 200 * time.Millisecond, Raise: 0.75, Lower: 0.5, LowerAfter: 10 * time.Second}
}

// governor decides, from samples of CPU use, whether the scheduler runs on
// one processor. It starts on one: a daemon with a backlog waiting at start
// is on the default after its first sample.
type governor struct {
	p     Policy
	one   bool          // on one processor
	quiet time.Duration // how long use stayed below p.Lower, on the default
}

func newGovernor(p Policy) *governor { return &governor{p: p, one: true} }

// step takes the cores used over the last dt and reports whether to run on
// one processor from now on, and whether that changed.
func (g *governor) step(cores float64, dt time.Duration) (one, changed bool) {
	if g.one {
		if cores > g.p.Raise {
			g.one, g.quiet = false, 0
			return false, true
		}
		return true, false
	}
	if cores >= g.p.Lower {
		g.quiet = 0
		return false, false
	}
	g.quiet += dt
	if g.quiet >= g.p.LowerAfter {
		g.one, g.quiet = true, 0
		return true, true
	}
	return false, false
}

// Run adapts GOMAXPROCS to the process's CPU use until ctx ends, then
// returns it to the runtime's default. It does nothing when GOMAXPROCS is
// set in the environment, when the default is one processor already, or
// where the process's CPU time cannot be read.
func Run(ctx context.Context, p Policy, log *slog.Logger) {
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		log.Info("GOMAXPROCS is set: the scheduler keeps it", "gomaxprocs", v)
		return
	}
	if runtime.GOMAXPROCS(0) <= 1 {
		return
	}
	last, err := cpuTime()
	if err != nil {
		log.Warn("cannot read the process's CPU time: the scheduler keeps its default processors", "err", err)
		return
	}
	defer runtime.SetDefaultGOMAXPROCS()
	g := newGovernor(p)
	set(true, log)
	lastAt := time.Now()
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		used, err := cpuTime()
		if err != nil {
			log.Warn("cannot read the process's CPU time: the scheduler returns to its default processors", "err", err)
			return
		}
		dt := now.Sub(lastAt) // a ticker's ticks are apart: dt > 0
		cores := (used - last).Seconds() / dt.Seconds()
		last, lastAt = used, now
		if one, changed := g.step(cores, dt); changed {
			set(one, log)
		}
	}
}

// set runs the scheduler on one processor or on the runtime's default.
func set(one bool, log *slog.Logger) {
	if one {
		runtime.GOMAXPROCS(1)
	} else {
		runtime.SetDefaultGOMAXPROCS()
	}
	log.Debug("scheduler processors", "gomaxprocs", runtime.GOMAXPROCS(0))
}
