package queue

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Tests of the raw-format scripts, straight against Redis.

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

func TestAckOfMemberAnotherReplicaHandledChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	f.zadd(0, f.redisNow()-1, "m")
	f.claim(0, 1, time.Minute)
	if n, err := f.q.Ack(f.ctx, f.tp, 0, []string{"m"}); err != nil || n != 1 {
		t.Fatalf("first Ack = %d, %v; want 1", n, err)
	}
	f.zadd(0, f.redisNow()+60_000, "m") // the producer schedules the same bytes again
	if n, err := f.q.Ack(f.ctx, f.tp, 0, []string{"m", "never-claimed"}); err != nil || n != 0 {
		t.Fatalf("second Ack = %d, %v; want 0", n, err)
	}
	if _, ok := f.zscore(f.tp.Keys(0).Scheduled, "m"); !ok {
		t.Error("the second Ack removed the newly scheduled copy")
	}
}

func TestRetryOfMemberNoLongerInFlightChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.zadd(0, f.redisNow()-1, "m")
	f.claim(0, 1, time.Minute)
	if _, err := f.q.Ack(f.ctx, f.tp, 0, []string{"m"}); err != nil {
		t.Fatal(err)
	}
	for _, fail := range []Failure{{Member: "m", Reason: "late nack"}, {Member: "m", Permanent: true, Reason: "late"}} {
		out, err := f.q.Retry(f.ctx, f.tp, 0, fail, 3)
		if err != nil || out != NotInflight {
			t.Fatalf("Retry(%+v) = %v, %v; want not-inflight", fail, out, err)
		}
	}
	if f.zcard(k.Scheduled)+f.zcard(k.Dead)+f.zcard(k.Inflight) != 0 {
		t.Error("a late Retry changed the sets")
	}
	if _, ok := f.hget(k.Attempts, "m"); ok {
		t.Error("a late Retry counted an attempt")
	}
}

func TestReapOfLeaseAnotherReplicaAckedChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.zadd(0, f.redisNow()-1, "m")
	f.claim(0, 1, time.Millisecond)
	if n, _ := f.q.Ack(f.ctx, f.tp, 0, []string{"m"}); n != 1 {
		t.Fatalf("Ack = %d, want 1", n)
	}
	time.Sleep(5 * time.Millisecond) // the lease would have passed
	r, err := f.q.Reap(f.ctx, f.tp, 0, 100, "0")
	if err != nil || r.Reaped != 0 {
		t.Fatalf("Reap = %+v, %v; want nothing reaped", r, err)
	}
	if f.zcard(k.Scheduled) != 0 {
		t.Error("Reap brought back an acked message")
	}
}

func TestFailedAttemptsReachDeadSetWithReason(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.zadd(0, f.redisNow()-1, "m")
	const maxAttempts = 3
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		var c Claim
		eventually(t, "the retry falls due", func() bool {
			c = f.claim(0, 1, time.Minute)
			return len(c.Messages) == 1
		})
		if c.Messages[0].Attempts != attempt-1 {
			t.Fatalf("attempt %d: claim says %d attempts before", attempt, c.Messages[0].Attempts)
		}
		out, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: "m", Backoff: time.Millisecond, Reason: "nack #" + string(rune('0'+attempt))}, maxAttempts)
		want := Retrying
		if attempt == maxAttempts {
			want = Dead
		}
		if err != nil || out != want {
			t.Fatalf("attempt %d: Retry = %v, %v; want %v", attempt, out, err, want)
		}
	}
	if _, ok := f.zscore(k.Dead, "m"); !ok {
		t.Fatal("m is not in the dead set")
	}
	if reason, _ := f.hget(k.DeadReason, "m"); reason != "nack #3" {
		t.Errorf("reason %q, want the last error", reason)
	}
	for _, key := range []string{k.Due, k.Attempts} {
		if _, ok := f.hget(key, "m"); ok {
			t.Errorf("%s still holds m", key)
		}
	}
	if f.zcard(k.Scheduled)+f.zcard(k.Inflight) != 0 {
		t.Error("m is still scheduled or in flight")
	}
}

func TestPermanentFailureDeadLettersAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	f.zadd(0, f.redisNow()-1, "m")
	f.claim(0, 1, time.Minute)
	out, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: "m", Permanent: true, Reason: "message too large"}, 10)
	if err != nil || out != Dead {
		t.Fatalf("Retry = %v, %v; want dead", out, err)
	}
	if reason, _ := f.hget(f.tp.Keys(0).DeadReason, "m"); reason != "message too large" {
		t.Errorf("reason %q", reason)
	}
}

func TestLeaseExpiryReturnsMessageOnceAtItsOriginalDue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	due := f.redisNow() - 500
	f.zadd(0, due, "m")
	f.claim(0, 1, time.Millisecond)
	var r ReapResult
	eventually(t, "the lease expires and is reaped", func() bool {
		var err error
		if r, err = f.q.Reap(f.ctx, f.tp, 0, 100, "0"); err != nil {
			t.Fatal(err)
		}
		return r.Reaped > 0
	})
	if r.Reaped != 1 {
		t.Fatalf("reaped %d, want 1", r.Reaped)
	}
	if r2, _ := f.q.Reap(f.ctx, f.tp, 0, 100, "0"); r2.Reaped != 0 {
		t.Errorf("second Reap returned %d more", r2.Reaped)
	}
	if s, ok := f.zscore(k.Scheduled, "m"); !ok || s != due {
		t.Errorf("m back at %v (%v), want its due %v", s, ok, due)
	}
	if f.zcard(k.Inflight) != 0 {
		t.Error("m is still in flight")
	}
}

func TestLeaseExpiredTwiceKeepsOriginalDueAndAttempts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	due := f.redisNow() - 500
	f.zadd(0, due, "m")
	for round := 1; round <= 2; round++ {
		c := f.claim(0, 1, time.Millisecond)
		if len(c.Messages) != 1 || c.Messages[0].Due != due || c.Messages[0].Attempts != 0 {
			t.Fatalf("round %d: claim = %+v, want m due %v with 0 attempts", round, c.Messages, due)
		}
		eventually(t, "the lease is reaped", func() bool {
			r, err := f.q.Reap(f.ctx, f.tp, 0, 100, "0")
			if err != nil {
				t.Fatal(err)
			}
			return r.Reaped == 1
		})
	}
	c := f.claim(0, 1, time.Minute)
	if len(c.Messages) != 1 || c.Messages[0].Due != due {
		t.Fatalf("third claim = %+v", c.Messages)
	}
}

func TestReapLeavesMessageTheProducerRescheduledWhileInFlight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	f.zadd(0, f.redisNow()-1, "m")
	f.claim(0, 1, time.Millisecond)
	later := f.redisNow() + 3_600_000
	f.zadd(0, later, "m")
	eventually(t, "the lease is reaped", func() bool {
		r, _ := f.q.Reap(f.ctx, f.tp, 0, 100, "0")
		return r.Reaped == 1
	})
	if s, _ := f.zscore(f.tp.Keys(0).Scheduled, "m"); s != later {
		t.Errorf("score %v, want the producer's %v", s, later)
	}
}

func TestRetryKeepsTheProducersRescheduleWhileInFlight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	f.zadd(0, f.redisNow()-1, "m")
	f.claim(0, 1, time.Minute)
	later := f.redisNow() + 3_600_000
	f.zadd(0, later, "m")
	if out, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: "m", Backoff: time.Millisecond}, 5); err != nil || out != Retrying {
		t.Fatalf("Retry = %v, %v", out, err)
	}
	if s, _ := f.zscore(f.tp.Keys(0).Scheduled, "m"); s != later {
		t.Errorf("score %v, want the producer's %v", s, later)
	}
}

func TestReleaseReturnsMessagesAtTheirDueWithoutAnAttempt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	due := f.redisNow() - 200
	f.zadd(0, due, "a", "b")
	f.claim(0, 2, time.Minute)
	n, err := f.q.Release(f.ctx, f.tp, 0, []string{"a", "b", "unknown"})
	if err != nil || n != 2 {
		t.Fatalf("Release = %d, %v; want 2", n, err)
	}
	c := f.claim(0, 10, time.Minute)
	if diff := cmp.Diff([]string{"a", "b"}, members(c)); diff != "" {
		t.Fatalf("reclaimed (-want +got):\n%s", diff)
	}
	for _, m := range c.Messages {
		if m.Attempts != 0 || m.Due != due {
			t.Errorf("%s: attempts %d due %v after release", m.Member, m.Attempts, m.Due)
		}
	}
	if _, ok := f.hget(k.Attempts, "a"); ok {
		t.Error("Release counted an attempt")
	}
}

func TestMinusInfScoreIsDeadLetteredWithReason(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.zadd(0, math.Inf(-1), "never")
	f.zadd(0, f.redisNow()-1, "ok")
	c := f.claim(0, 10, time.Minute)
	if diff := cmp.Diff([]string{"ok"}, members(c)); diff != "" {
		t.Fatalf("claimed (-want +got):\n%s", diff)
	}
	if c.Dead != 1 {
		t.Errorf("claim reports %d dead-lettered, want 1", c.Dead)
	}
	if _, ok := f.zscore(k.Dead, "never"); !ok {
		t.Fatal("-inf member is not dead")
	}
	if reason, _ := f.hget(k.DeadReason, "never"); !strings.Contains(reason, "-inf") {
		t.Errorf("reason %q does not name -inf", reason)
	}
}

func TestPlusInfScoreIsDeadLetteredWithReason(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.zadd(0, math.Inf(1), "never")
	f.zadd(0, f.redisNow()+60_000, "later")
	r, err := f.q.Reap(f.ctx, f.tp, 0, 100, "0")
	if err != nil || r.Dead != 1 {
		t.Fatalf("Reap = %+v, %v; want 1 dead", r, err)
	}
	if reason, _ := f.hget(k.DeadReason, "never"); !strings.Contains(reason, "+inf") {
		t.Errorf("reason %q does not name +inf", reason)
	}
	if _, ok := f.zscore(k.Scheduled, "later"); !ok {
		t.Error("the finite member was touched")
	}
}

func TestReapSweepsRecordsOfMessagesCancelledWhileWaitingToRetry(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.zadd(0, f.redisNow()-1, "m")
	f.claim(0, 1, time.Minute)
	if _, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: "m", Backoff: time.Hour}, 5); err != nil {
		t.Fatal(err)
	}
	// A producer cancels with a bare ZREM, leaving :due and :attempts behind.
	f.rdb.ZRem(f.ctx, k.Scheduled, "m")
	cursor, swept := "0", 0
	for i := 0; ; i++ {
		r, err := f.q.Reap(f.ctx, f.tp, 0, 100, cursor)
		if err != nil {
			t.Fatal(err)
		}
		swept += r.Swept
		if cursor = r.Cursor; cursor == "0" || i > 100 {
			break
		}
	}
	if swept != 1 {
		t.Errorf("swept %d, want 1", swept)
	}
	for _, key := range []string{k.Due, k.Attempts} {
		if _, ok := f.hget(key, "m"); ok {
			t.Errorf("%s still holds m", key)
		}
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
