package forwarder

import (
	"slices"
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

// TestLeasesRenewOnlyBatchesOlderThanTheCutoffAndForgetDropped: stale lists
// the members of tracked batches whose lease was set before the cutoff and
// marks them renewed, so the next call skips them; a dropped batch is never
// renewed again.
func TestLeasesRenewOnlyBatchesOlderThanTheCutoffAndForgetDropped(t *testing.T) {
	l := newLeases()
	t0 := time.Unix(1000, 0)
	old := l.track([]queue.Claimed{{Member: "a"}, {Member: "b"}}, t0)
	l.track([]queue.Claimed{{Member: "c"}}, t0.Add(10*time.Second))
	got, _ := l.stale(t0.Add(5*time.Second), t0.Add(6*time.Second))
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("stale = %q, want the batch set before the cutoff", got)
	}
	if got, _ := l.stale(t0.Add(5*time.Second), t0.Add(7*time.Second)); len(got) != 0 {
		t.Errorf("stale right after a renewal = %q, want none", got)
	}
	l.drop(old)
	got, _ = l.stale(t0.Add(time.Minute), t0.Add(time.Minute))
	if !slices.Equal(got, []string{"c"}) {
		t.Errorf("stale after drop = %q, want only c", got)
	}
}
