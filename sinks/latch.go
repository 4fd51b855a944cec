package sinks

import "sync"

// Latch is the lifecycle of a sink's connections: the calls that use them
// (Publish, Ping, destination checks) enter it, and Close shuts it, so no
// call starts after Close and Close waits for those under way. The zero
// value is open.
type Latch struct {
	mu     sync.Mutex
	closed bool
	calls  sync.WaitGroup
}

// Enter registers a call that uses the connections; false once the latch is
// shut. The caller calls Leave when the call ends.
func (g *Latch) Enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.calls.Add(1)
	return true
}

// Leave ends a call Enter registered.
func (g *Latch) Leave() { g.calls.Done() }

// Shut refuses every later Enter; false when the latch was shut already (a
// second Close, which has nothing left to do).
func (g *Latch) Shut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.closed = true
	return true
}

// Wait waits for the calls under way to Leave.
func (g *Latch) Wait() { g.calls.Wait() }
