package forwarder

import (
	"context"
	"sync"
	"time"
)

// Each background loop of a replica (reaper.go, backlog.go, stranded.go,
// heldstate.go, envreport.go, limits.go, wake.go, keyspace.go,
// ownership.go) is a small service of its own: a type holding only what it
// uses, built by its constructor from its config (defaults, validation),
// with run(ctx), which loops until ctx ends, and runOnce(ctx), one pass
// returning a pass, which tests call (the two listeners, wake.go and keyspace.go, relay a
// subscription instead: wakeListener.relay, keyspaceWatcher.runOnce reads
// the setting). New builds them; Run starts them as one group (services)
// and waits for them after the scanners have drained. Ownership is run by
// Run itself, outside the group: its end starts the drain. The scanners
// are started per owned slot (forwarder.go).

// pass is what one runOnce of a loop did: the one shape every loop's pass
// returns, for its run loop and for tests to assert on.
type pass struct {
	// done counts what the pass handled: slots read or reaped, topics
	// reported or searched, limits applied.
	done int
	// err joins the pass's failures, each already counted (RedisErrs) and
	// logged as the loop logs them; nil: the pass completed.
	err error
	// next is when the loop wants its next pass; zero: after its interval.
	next time.Time
}

// slotShared is what the scanners and the loops share about the owned
// slots, one value passed to each instead of four pointers: the
// scanners' alarms (wakes), when each slot is reaped next (reaps), the
// slots' cached stats (stats) and the keyspace mode in force (ks).
type slotShared struct {
	wakes *wakeups
	reaps *reapSchedule
	stats *statsCache
	ks    *keyspaceState
}

// service is a background loop: run returns once ctx has ended.
type service interface {
	run(ctx context.Context)
}

// serviceFunc is a loop that is still a function of the Forwarder.
type serviceFunc func(ctx context.Context)

func (fn serviceFunc) run(ctx context.Context) { fn(ctx) }

// services runs a group of services until ctx ends; wait waits for every
// one to return.
type services struct{ wg sync.WaitGroup }

func (g *services) start(ctx context.Context, ss ...service) {
	for _, s := range ss {
		g.wg.Go(func() { s.run(ctx) })
	}
}

func (g *services) wait() { g.wg.Wait() }

// passes lets a test wait for a loop's passes instead of polling: the loop
// signals it after each pass. Nil (outside tests) costs nothing; a signal
// no one waits for is dropped.
type passes chan struct{}

func (p passes) signal() {
	if p == nil {
		return
	}
	select {
	case p <- struct{}{}:
	default:
	}
}
