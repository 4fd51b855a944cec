package membership

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestMemberBeatAnswersTheLiveSetAndWhoForwardsWhat: each beat answers
// the live replicas and their reports in one call; a member reports its
// topics on its first beat and again when the live set changes, so a
// replica that joins is seen with its topics at the others' next beat.
func TestMemberBeatAnswersTheLiveSetAndWhoForwardsWhat(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	s := New(queue.New(rdb))
	ctx := context.Background()
	a := s.Member(prefix, "a", []string{"orders"}, time.Minute)
	b := s.Member(prefix, "b", []string{"digests"}, time.Minute)

	v, err := a.Beat(ctx, time.Now())
	if err != nil || len(v.Failed) != 0 {
		t.Fatalf("a's first beat: %v, failed %v", err, v.Failed)
	}
	if !slices.Equal(v.Set.Live, []string{"a"}) || !v.Forwarding.Forwards("a", "orders") || v.Forwarding.Forwards("a", "digests") {
		t.Fatalf("a's first beat: live %v, served %v; want a forwarding orders", v.Set.Live, v.Forwarding.Served)
	}
	if v, err = b.Beat(ctx, time.Now()); err != nil || !slices.Equal(v.Set.Live, []string{"a", "b"}) {
		t.Fatalf("b's first beat: live %v, %v; want a, b", v.Set.Live, err)
	}
	if !v.Forwarding.Forwards("a", "orders") || !v.Forwarding.Forwards("b", "digests") || v.Forwarding.Forwards("b", "orders") {
		t.Errorf("b's first beat: served %v; want a: orders, b: digests", v.Forwarding.Served)
	}
	if v, err = a.Beat(ctx, time.Now()); err != nil || !slices.Equal(v.Forwarding.Forwarders("digests"), []string{"b"}) {
		t.Errorf("a's second beat: forwarders of digests %v, %v; want b", v.Forwarding.Forwarders("digests"), err)
	}
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Unserve(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err = a.Beat(ctx, time.Now()); err != nil || !slices.Equal(v.Set.Live, []string{"a"}) || v.Forwarding.Forwarders("digests") != nil {
		t.Errorf("after b left: live %v, forwarders of digests %v, %v; want a alone, none", v.Set.Live, v.Forwarding.Forwarders("digests"), err)
	}
}
