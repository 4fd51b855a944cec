package queue

import (
	"testing"
	"time"
)

// failTwice dead-letters member m after two refused publishes with a limit
// of two attempts, as a broker refusing the destination does.
func (f *fixture) failTwice(m string) {
	f.t.Helper()
	f.zadd(0, f.redisNow()-1, m)
	for attempt := 1; attempt <= 2; attempt++ {
		eventually(f.t, "the retry is due", func() bool { return len(f.claim(0, 1, time.Minute).Messages) == 1 })
		if _, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: m, Backoff: time.Millisecond, Reason: "312 NO_ROUTE"}, 2); err != nil {
			f.t.Fatal(err)
		}
	}
	if _, ok := f.zscore(f.tp.Keys(0).Dead, m); !ok {
		f.t.Fatalf("%s did not die", m)
	}
}

func TestDeadMessageKeepsItsAttemptsAndLastError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	f.failTwice("m")
	e, err := f.q.Inspect(f.ctx, f.tp, []byte("m"))
	if err != nil || e.State != "dead" || e.Attempts != 2 || e.LastError != "312 NO_ROUTE" {
		t.Errorf("Inspect = %+v, %v; want dead with 2 attempts and the last error", e, err)
	}
	p, err := f.q.List(f.ctx, f.tp, ListOptions{State: ListDead})
	if err != nil || len(p.Entries) != 1 || p.Entries[0].Attempts != 2 || p.Entries[0].LastError != "312 NO_ROUTE" {
		t.Errorf("List(dead) = %+v, %v; want one entry with 2 attempts", p.Entries, err)
	}
	k := f.tp.Keys(0)
	if _, ok := f.hget(k.Attempts, "m"); ok {
		t.Error("the dead member is still counted in the live attempts hash")
	}
}

func TestDeadAttemptsGoWithRequeueAndPurge(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.failTwice("requeued")
	f.failTwice("purged")
	if res, err := f.q.Requeue(f.ctx, f.tp, ByMember([]byte("requeued"))); err != nil || res.Requeued != 1 {
		t.Fatalf("Requeue = %+v, %v", res, err)
	}
	if e, _ := f.q.Inspect(f.ctx, f.tp, []byte("requeued")); e.Attempts != 0 {
		t.Errorf("requeued message shows %d attempts, want 0", e.Attempts)
	}
	if n, err := f.q.Purge(f.ctx, f.tp, ByMember([]byte("purged"))); err != nil || n != 1 {
		t.Fatalf("Purge = %d, %v", n, err)
	}
	if n, _ := f.rdb.HLen(f.ctx, k.DeadAttempts).Result(); n != 0 {
		t.Errorf("%s keeps %d records after requeue and purge", k.DeadAttempts, n)
	}
}

func TestSameBytesScheduledAgainShowTheirOwnAttempts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	f.failTwice("m")
	f.zadd(0, f.redisNow()+60_000, "m")
	if e, _ := f.q.Inspect(f.ctx, f.tp, []byte("m")); e.State != "scheduled" || e.Attempts != 0 {
		t.Errorf("Inspect = %+v, want scheduled with 0 attempts", e)
	}
}
