package queue

import (
	"testing"
	"time"
)

func TestExtendKeepsALiveClaimFromBeingReaped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	q, topic, ctx := f.q, f.tp, f.ctx
	if _, err := q.ScheduleMember(ctx, topic, []byte("slow"), At(time.Now().Add(-time.Second))); err != nil {
		t.Fatal(err)
	}
	c, err := q.Claim(ctx, topic, 0, 10, 150*time.Millisecond)
	if err != nil || len(c.Messages) != 1 {
		t.Fatalf("claim: %+v %v", c, err)
	}
	for range 4 {
		time.Sleep(75 * time.Millisecond)
		n, err := q.Extend(ctx, topic, 0, []string{"slow", "never-claimed"}, 150*time.Millisecond)
		if err != nil || n != 1 {
			t.Fatalf("extend: %d %v, want 1 (only the claimed member)", n, err)
		}
		r, err := q.Reap(ctx, topic, 0, 100, "0")
		if err != nil || r.Reaped != 0 {
			t.Fatalf("reaped %d (%v) a lease that was extended", r.Reaped, err)
		}
	}
	if _, err := q.Client().ZScore(ctx, topic.Keys(0).Inflight, "never-claimed").Result(); err == nil {
		t.Error("extend added a member that was not in flight")
	}
	time.Sleep(200 * time.Millisecond)
	if r, err := q.Reap(ctx, topic, 0, 100, "0"); err != nil || r.Reaped != 1 {
		t.Errorf("after the extensions stopped, reaped %d (%v), want 1", r.Reaped, err)
	}
}

func TestExtendNeverShortensALease(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	f.zadd(0, f.redisNow()-10, "held")
	if c := f.claim(0, 10, time.Hour); len(c.Messages) != 1 {
		t.Fatalf("claimed %v", members(c))
	}
	before, _ := f.zscore(f.tp.Keys(0).Inflight, "held")
	n, err := f.q.Extend(f.ctx, f.tp, 0, []string{"held"}, time.Second)
	if err != nil || n != 0 {
		t.Fatalf("extend: %d %v, want 0 (the lease is already later)", n, err)
	}
	if after, _ := f.zscore(f.tp.Keys(0).Inflight, "held"); after != before {
		t.Errorf("lease moved from %v to %v by a shorter extension", before, after)
	}
}
