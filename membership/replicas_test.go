package membership

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

func TestHeartbeatReturnsLiveReplicasWithDeadlinesAndDropsExpiredOnes(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	q := New(queue.New(rdb))
	ctx := context.Background()

	if _, err := q.Heartbeat(ctx, prefix, "short", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Heartbeat(ctx, prefix, "b", time.Minute); err != nil {
		t.Fatal(err)
	}
	set, err := q.Heartbeat(ctx, prefix, "a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(set.Live, []string{"a", "b", "short"}) {
		t.Fatalf("live %v, want a, b, short (sorted)", set.Live)
	}
	for id, ttl := range map[string]time.Duration{"a": 10 * time.Second, "b": time.Minute} {
		left := set.Deadlines[id].Sub(set.Now)
		if left > ttl || left < ttl-5*time.Second {
			t.Errorf("%s: deadline %s after Redis's now, want about %s", id, left, ttl)
		}
	}
	if next, ok := set.NextExpiry("a"); !ok || !next.Equal(set.Deadlines["short"]) {
		t.Errorf("next expiry %s %v, want short's deadline %s", next, ok, set.Deadlines["short"])
	}

	time.Sleep(100 * time.Millisecond) // short's heartbeat expires
	set, err = q.Heartbeat(ctx, prefix, "a", 10*time.Second)
	if err != nil || !slices.Equal(set.Live, []string{"a", "b"}) {
		t.Fatalf("live %v, %v; want a, b", set.Live, err)
	}
	live, err := q.Leave(ctx, prefix, "a")
	if err != nil || !slices.Equal(live, []string{"b"}) {
		t.Fatalf("after leaving: live %v, %v; want b", live, err)
	}
	if _, ok := (ReplicaSet{Deadlines: map[string]time.Time{"a": time.Now()}}).NextExpiry("a"); ok {
		t.Error("a replica alone has no other replica to expire")
	}
}
