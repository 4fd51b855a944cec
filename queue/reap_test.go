package queue

import (
	"testing"
	"time"
)

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

func TestReapSweepDropsIDsWhoseMemberIsGone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	k := f.tp.Keys(0)
	m, _ := f.scheduleNow("gone", "x")
	// At another score: an entry stands while any member is at its score
	// (the sweep reads no member, see reapScript).
	if _, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "kept", Body: []byte("y")}, In(time.Hour)); err != nil {
		t.Fatal(err)
	}
	f.rdb.ZRem(f.ctx, k.Scheduled, m) // a producer that skipped the index

	cursor, swept, calls := "0", 0, 0
	for {
		r, err := f.q.Reap(f.ctx, f.tp, 0, 1, cursor)
		if err != nil {
			t.Fatal(err)
		}
		swept += r.Swept
		calls++
		if cursor = r.Cursor; cursor == "0" || calls > 100 {
			break
		}
	}
	if swept != 1 || cursor != "0" {
		t.Errorf("swept %d (cursor %q after %d calls), want 1 and a finished sweep", swept, cursor, calls)
	}
	if _, ok := f.idNames(0, "gone"); ok {
		t.Error("the stale id survived the sweep")
	}
	f.checkIndex()
}
