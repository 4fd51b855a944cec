package forwarder

import (
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// An idle slot keeps no goroutine for its leases: the first batch tracked
// starts the keeper, later ones while it runs start none, and the keeper's
// tick that finds nothing leased lets the next track start another.
func TestLeaseKeeperRunsOnlyWhileSomethingIsLeased(t *testing.T) {
	l := newLeases()
	started := 0
	l.keeper = func() { started++ }
	now := time.Unix(1000, 0)

	a := l.track([]queue.Claimed{{Member: "a"}}, now)
	b := l.track([]queue.Claimed{{Member: "b"}}, now)
	if started != 1 {
		t.Fatalf("keepers started for two batches = %d, want 1", started)
	}
	members, idle := l.stale(now.Add(time.Second), now.Add(2*time.Second))
	if idle || len(members) != 2 {
		t.Fatalf("stale with two old batches = %v idle %v, want both members, not idle", members, idle)
	}
	l.drop(a)
	l.drop(b)
	if _, idle := l.stale(now, now); !idle {
		t.Fatal("stale with nothing leased: not idle, want the keeper told to end")
	}
	l.track([]queue.Claimed{{Member: "c"}}, now)
	if started != 2 {
		t.Fatalf("keepers started after the first ended = %d, want 2", started)
	}
}
