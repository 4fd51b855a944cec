package queue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestClaimNeverReturnsFutureMessages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	now := f.redisNow()
	f.zadd(0, now-1000, "due")
	f.zadd(0, now+60_000, "future")
	f.zadd(0, now+3_600_000, "much-later")

	c := f.claim(0, 100, time.Minute)
	if diff := cmp.Diff([]string{"due"}, members(c)); diff != "" {
		t.Fatalf("claimed (-want +got):\n%s", diff)
	}
	if !c.HasNext || c.Next != now+60_000 {
		t.Errorf("next = %v (has %v), want %v", c.Next, c.HasNext, now+60_000)
	}
	if c2 := f.claim(0, 100, time.Minute); len(c2.Messages) != 0 {
		t.Errorf("second claim returned %v, want nothing", members(c2))
	}
	if n := f.zcard(f.tp.Keys(0).Scheduled); n != 2 {
		t.Errorf("scheduled holds %d, want the 2 future messages", n)
	}
}

func TestClaimTakesMessagesInScoreOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	now := f.redisNow()
	f.zadd(0, now-10, "c")
	f.zadd(0, now-30, "a")
	f.zadd(0, now-20, "b")
	f.zadd(0, now-5, "d")

	c := f.claim(0, 2, time.Minute)
	if diff := cmp.Diff([]string{"a", "b"}, members(c)); diff != "" {
		t.Fatalf("first batch (-want +got):\n%s", diff)
	}
	if c.Messages[0].Due != now-30 || c.Messages[1].Due != now-20 {
		t.Errorf("due times %v, %v; want %v, %v", c.Messages[0].Due, c.Messages[1].Due, now-30, now-20)
	}
	c = f.claim(0, 10, time.Minute)
	if diff := cmp.Diff([]string{"c", "d"}, members(c)); diff != "" {
		t.Fatalf("second batch (-want +got):\n%s", diff)
	}
}

func TestClaimOfEqualScoresTakesEachOnceInMemberOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	now := f.redisNow()
	f.zadd(0, now-100, "m3", "m1", "m2", "m4")

	var got []string
	for range 4 {
		got = append(got, members(f.claim(0, 1, time.Minute))...)
	}
	if diff := cmp.Diff([]string{"m1", "m2", "m3", "m4"}, got); diff != "" {
		t.Fatalf("claims (-want +got):\n%s", diff)
	}
	if c := f.claim(0, 10, time.Minute); len(c.Messages) != 0 {
		t.Errorf("claimed %v again", members(c))
	}
}

func TestClaimOfEmptySetReturnsNothingAndNoNext(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	c := f.claim(0, 10, time.Minute)
	if len(c.Messages) != 0 || c.HasNext {
		t.Fatalf("claim of empty set = %+v", c)
	}
	if d := time.Since(c.Now); d < -time.Minute || d > time.Minute {
		t.Errorf("claim's now %v is not Redis's time", c.Now)
	}
}

func TestRemovedMessageIsNeverClaimed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	now := f.redisNow()
	f.zadd(0, now+50, "cancelled", "kept")
	if ok, err := f.q.Cancel(f.ctx, f.tp, []byte("cancelled")); err != nil || !ok {
		t.Fatalf("Cancel = %v, %v", ok, err)
	}
	var got []string
	eventually(t, "kept is claimed", func() bool {
		got = append(got, members(f.claim(0, 10, time.Minute))...)
		return len(got) > 0
	})
	if diff := cmp.Diff([]string{"kept"}, got); diff != "" {
		t.Fatalf("claimed (-want +got):\n%s", diff)
	}
}

func TestRescheduledMessageIsClaimedAtItsNewTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	now := f.redisNow()
	f.zadd(0, now+3_600_000, "later-then-now")
	f.zadd(0, now-1, "now-then-later")
	f.zadd(0, now-1_000, "later-then-now") // ZADD again: rescheduled earlier
	f.zadd(0, now+3_600_000, "now-then-later")

	c := f.claim(0, 10, time.Minute)
	if diff := cmp.Diff([]string{"later-then-now"}, members(c)); diff != "" {
		t.Fatalf("claimed (-want +got):\n%s", diff)
	}
	if c.Messages[0].Due != now-1_000 {
		t.Errorf("due %v, want the new time %v", c.Messages[0].Due, now-1_000)
	}
	if !c.HasNext || c.Next != now+3_600_000 {
		t.Errorf("next %v, want %v", c.Next, now+3_600_000)
	}
}

func TestClaimLeavesFractionalDueTimesExact(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	due := f.redisNow() - 1000 + 0.25
	f.zadd(0, due, "m")
	c := f.claim(0, 1, time.Minute)
	if len(c.Messages) != 1 || c.Messages[0].Due != due {
		t.Fatalf("claim = %+v, want due %v", c.Messages, due)
	}
}
