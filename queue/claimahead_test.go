package queue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestClaimAheadTakesOnlyTheWindowAndReportsScores(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	now := f.redisNow()
	f.zadd(0, now-10, "due")
	f.zadd(0, now+150, "soon")
	f.zadd(0, now+60_000, "later")

	c, err := f.q.ClaimAhead(f.ctx, f.tp, 0, 100, time.Minute, time.Second)
	if err != nil {
		t.Fatalf("ClaimAhead: %v", err)
	}
	if diff := cmp.Diff([]string{"due", "soon"}, members(c)); diff != "" {
		t.Fatalf("claimed (-want +got):\n%s", diff)
	}
	claimNow := float64(c.Now.UnixMicro()) / 1000
	if got := c.Messages[0]; got.Score != now-10 || got.Score > claimNow {
		t.Errorf("due member: score %v, want %v (at or before now %v)", got.Score, now-10, claimNow)
	}
	if got := c.Messages[1]; got.Score != now+150 || got.Due != now+150 || got.Score <= claimNow {
		t.Errorf("ahead member: score %v due %v, want %v after now %v", got.Score, got.Due, now+150, claimNow)
	}
	if !c.HasNext || c.Next != now+60_000 {
		t.Errorf("next = %v (has %v), want %v", c.Next, c.HasNext, now+60_000)
	}
	// The lease covers the hold: it counts from the end of the window.
	lease, ok := f.zscore(f.tp.Keys(0).Inflight, "soon")
	if !ok || lease < claimNow+time.Second.Seconds()*1000+time.Minute.Seconds()*1000-1 {
		t.Errorf("lease deadline %v (in flight %v), want at least now + look-ahead + lease", lease, ok)
	}
}

func TestClaimWithoutLookAheadTakesNothingAhead(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	now := f.redisNow()
	f.zadd(0, now+500, "soon")
	c := f.claim(0, 100, time.Minute)
	if len(c.Messages) != 0 || !c.HasNext || c.Next != now+500 {
		t.Fatalf("claimed %v, next %v (has %v); want nothing, next %v", members(c), c.Next, c.HasNext, now+500)
	}
}

func TestFullClaimReportsNoNext(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	now := f.redisNow()
	f.zadd(0, now-10, "a", "b", "c")
	c := f.claim(0, 2, time.Minute)
	if diff := cmp.Diff([]string{"a", "b"}, members(c)); diff != "" {
		t.Fatalf("claimed (-want +got):\n%s", diff)
	}
	if c.HasNext {
		t.Errorf("a full claim reported next %v; want none (claim again)", c.Next)
	}
}
