package forwarder

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestInflightCountsOutstandingMessagesAndSumsThemPerTopic: the count a
// slot's claims add and its settlements take out, with the topic's sum
// following it; room is the cap less the count, at most a batch.
func TestInflightCountsOutstandingMessagesAndSumsThemPerTopic(t *testing.T) {
	var topic atomic.Int64
	a, b := newInflight(&topic), newInflight(&topic)
	a.add(7)
	b.add(5)
	if got := topic.Load(); got != 12 {
		t.Fatalf("topic sum %d, want 12 (7 + 5)", got)
	}
	if n, _ := a.room(10, 20); n != 10 {
		t.Errorf("room with 7 of 20 out = %d, want a whole batch of 10", n)
	}
	if n, _ := b.room(10, 12); n != 7 {
		t.Errorf("room with 5 of 12 out = %d, want 7", n)
	}
	a.settle(7)
	if n, _ := a.room(10, 7); n != 7 || topic.Load() != 5 {
		t.Errorf("after settling all of a: room %d (want 7), topic %d (want 5)", n, topic.Load())
	}
}

// TestInflightBreakOrderSendsLaterBatchesBackUntilAllSettled: after a batch
// went back for its connection, no room and every batch of the old epoch is
// stale, until everything claimed before the loss has settled.
func TestInflightBreakOrderSendsLaterBatchesBackUntilAllSettled(t *testing.T) {
	in := newInflight(nil)
	_, before := in.room(10, 100)
	in.add(20)
	in.breakOrder()
	if n, _ := in.room(10, 100); n != 0 {
		t.Errorf("room after a break = %d, want 0 until everything settled", n)
	}
	if !in.stale(before) {
		t.Error("a batch claimed before the break is not stale")
	}
	in.settle(15)
	if n, _ := in.room(10, 100); n != 0 {
		t.Errorf("room with 5 still out after the break = %d, want 0", n)
	}
	in.settle(5)
	n, after := in.room(10, 100)
	if n != 10 || in.stale(after) || !in.stale(before) {
		t.Errorf("after all settled: room %d (want 10), new epoch stale %v (want false), old epoch stale %v (want true)", n, in.stale(after), in.stale(before))
	}
}

// TestInflightWaitRoomWaitsForASettlementAndEndsWithCtx: with the cap
// reached, waitRoom signals that it waits and returns once messages settle;
// backlogged, it waits for room for a whole batch.
func TestInflightWaitRoomWaitsForASettlementAndEndsWithCtx(t *testing.T) {
	in := newInflight(nil)
	in.add(10)
	got := make(chan int, 1)
	go func() {
		n, _, _ := in.waitRoom(context.Background(), 10, 10, true)
		got <- n
	}()
	<-in.wanted // it waits
	in.settle(3)
	<-in.wanted // 3 free is not a whole batch: it waits again
	in.settle(7)
	if n := <-got; n != 10 {
		t.Errorf("waitRoom = %d, want 10", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in.add(10)
	if _, _, ok := in.waitRoom(ctx, 10, 10, false); ok {
		t.Error("waitRoom with a full cap and an ended ctx returned ok")
	}
}
