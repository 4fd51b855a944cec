package queue

import (
	"math"
	"testing"
	"time"
)

// TestClaimAndStatsFindTheNextScoreFromCounts: the claim's Next and stats'
// NextDue and OldestOverdue, found by galloping and halving on ZCOUNT, are
// the lowest score to the millisecond rounded up, whatever the distance;
// a score beyond the claim's NextWithin is no Next; +inf reads as +Inf.
func TestClaimAndStatsFindTheNextScoreFromCounts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	now := f.redisNow()
	next := func(within time.Duration) (float64, bool) {
		t.Helper()
		c, err := f.q.ClaimWith(f.ctx, f.tp, 0, ClaimOptions{Limit: 10, Lease: time.Minute, NextWithin: within})
		if err != nil || len(c.Messages) != 0 {
			t.Fatalf("claim: %d messages, %v", len(c.Messages), err)
		}
		return c.Next, c.HasNext
	}
	for _, d := range []float64{1, 2, 3, 7.25, 1000, 86_400_000, 3e11} {
		f.rdb.Del(f.ctx, f.tp.Keys(0).Scheduled)
		f.zadd(0, now+60_000+d, "far")
		f.zadd(0, now+60_000+d+1, "after")
		if got, ok := next(0); d <= 3_600_000 && (!ok || got != math.Ceil(now+60_000+d)) {
			t.Errorf("next of a score %v ms on = %v %v, want %v", 60_000+d, got, ok, math.Ceil(now+60_000+d))
		} else if d > 3_600_000 && ok {
			t.Errorf("next of a score beyond the hour = %v, want none", got)
		}
		if got, ok := next(time.Second); ok {
			t.Errorf("next of a score %v ms on within a second = %v, want none", 60_000+d, got)
		}
		st, err := f.q.Stats(f.ctx, f.tp, 0)
		if err != nil || st.NextDue.UnixMilli() != int64(math.Ceil(now+60_000+d)) {
			t.Errorf("stats next due of %v ms on = %v, %v", 60_000+d, st.NextDue, err)
		}
	}
	// Beyond 2^53 ms doubles skip integers: the search ends (within 2 ms),
	// it does not loop until Redis's script timeout.
	for _, far := range []float64{1 << 53, 1<<53 + 2, 1e16, 1e300} {
		f.rdb.Del(f.ctx, f.tp.Keys(0).Scheduled)
		f.zadd(0, far, "beyond")
		st, err := f.q.Stats(f.ctx, f.tp, 0)
		if err != nil {
			t.Fatalf("stats with a score of %v: %v", far, err)
		}
		if got := float64(st.NextDue.UnixMilli()); far <= 1<<53+2 && (got < far || got > far+2) {
			t.Errorf("next due of a score of %v = %v", far, got)
		}
		next(0)
	}
	f.rdb.Del(f.ctx, f.tp.Keys(0).Scheduled)
	f.zadd(0, math.Inf(1), "never")
	if got, ok := next(0); !ok || !math.IsInf(got, 1) {
		t.Errorf("next of +inf = %v %v, want +Inf", got, ok)
	}
	f.zadd(0, now-86_400_000*365.5, "old")
	f.zadd(0, now-5, "recent")
	st, err := f.q.Stats(f.ctx, f.tp, 0)
	if err != nil || st.OldestOverdue.UnixMilli() != int64(math.Ceil(now-86_400_000*365.5)) || st.Overdue != 2 || !st.NextDue.IsZero() {
		t.Errorf("stats = %+v, %v; want the oldest a year and a half-day back, two overdue, next due +inf (zero)", st, err)
	}
}
