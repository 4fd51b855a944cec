package queue

import (
	"testing"
	"time"
)

// retryOnce claims member m (due now) of slot 0 and fails it once with why.
func (f *fixture) retryOnce(m, why string) {
	f.t.Helper()
	f.zadd(0, f.redisNow()-1, m)
	if c := f.claim(0, 100, time.Minute); len(c.Messages) == 0 {
		f.t.Fatalf("claimed nothing")
	}
	o, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: m, Backoff: time.Hour, Reason: why}, 10)
	if err != nil || o != Retrying {
		f.t.Fatalf("Retry = %v, %v", o, err)
	}
}

func TestRetryKeepsTheLastErrorAndEveryExitForgetsIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.retryOnce("acked", "nack 1")
	if why, _ := f.hget(k.DeadReason, "acked"); why != "nack 1" {
		t.Fatalf("last error %q, want nack 1", why)
	}
	// Back in flight: a second failure replaces the text, an ack forgets it.
	f.rdb.ZAdd(f.ctx, k.Scheduled, redisZ(f.redisNow()-1, "acked"))
	f.claim(0, 100, time.Minute)
	f.q.Retry(f.ctx, f.tp, 0, Failure{Member: "acked", Reason: "nack 2"}, 10)
	if why, _ := f.hget(k.DeadReason, "acked"); why != "nack 2" {
		t.Errorf("last error %q, want nack 2", why)
	}
	f.rdb.ZAdd(f.ctx, k.Scheduled, redisZ(f.redisNow()-1, "acked"))
	f.claim(0, 100, time.Minute)
	if n, err := f.q.Ack(f.ctx, f.tp, 0, []string{"acked"}); n != 1 || err != nil {
		t.Fatalf("Ack = %d, %v", n, err)
	}
	if _, ok := f.hget(k.DeadReason, "acked"); ok {
		t.Errorf("acked member kept its last error")
	}

	f.retryOnce("cancelled", "nack")
	if ok, err := f.q.Cancel(f.ctx, f.tp, []byte("cancelled")); !ok || err != nil {
		t.Fatalf("Cancel = %v, %v", ok, err)
	}
	f.retryOnce("zrem", "nack")
	f.rdb.ZRem(f.ctx, k.Scheduled, "zrem") // a producer's own cancel: the sweep cleans up
	if r, err := f.q.Reap(f.ctx, f.tp, 0, 100, "0"); err != nil || r.Swept != 1 {
		t.Fatalf("Reap = %+v, %v; want 1 swept", r, err)
	}
	for _, key := range []string{k.DeadReason, k.Attempts, k.Due} {
		if n, _ := f.rdb.HLen(f.ctx, key).Result(); n != 0 {
			left, _ := f.rdb.HKeys(f.ctx, key).Result()
			t.Errorf("%s keeps %v", key, left)
		}
	}
}

func TestRetryingReasonsAreNeitherListedNorPurgedAsDead(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.retryOnce("waiting", "broker said no")
	f.zadd(0, f.redisNow()-1, "poison")
	f.claim(0, 100, time.Minute)
	f.q.Retry(f.ctx, f.tp, 0, Failure{Member: "poison", Permanent: true, Reason: "too large"}, 10)

	dead, err := f.q.DeadList(f.ctx, f.tp, AllSlots, 0)
	if err != nil || len(dead) != 1 || dead[0].Member != "poison" || dead[0].Reason != "too large" {
		t.Fatalf("DeadList = %+v, %v; want poison alone", dead, err)
	}
	if n, _ := f.q.DeadCount(f.ctx, f.tp); n != 1 {
		t.Errorf("DeadCount = %d, want 1", n)
	}
	if _, err := f.q.Purge(f.ctx, f.tp, Ref{All: true}); err != nil {
		t.Fatal(err)
	}
	if why, _ := f.hget(k.DeadReason, "waiting"); why != "broker said no" {
		t.Errorf("purge --all took the retrying message's last error (%q)", why)
	}
	if _, ok := f.hget(k.DeadReason, "poison"); ok {
		t.Errorf("purged member kept its reason")
	}
}

func TestAckOfAMemberThatIsAlsoDeadKeepsTheDeadReason(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.retryOnce("twin", "nack")
	f.rdb.ZAdd(f.ctx, k.Dead, redisZ(1, "twin"))
	f.rdb.ZAdd(f.ctx, k.Scheduled, redisZ(f.redisNow()-1, "twin"))
	f.claim(0, 100, time.Minute)
	f.q.Ack(f.ctx, f.tp, 0, []string{"twin"})
	if _, ok := f.hget(k.DeadReason, "twin"); !ok {
		t.Errorf("ack dropped the reason of the dead copy")
	}
}

func TestARescheduledRetryingMessageRemovedByAProducerLeavesNoRecords(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.retryOnce("moved", "nack")
	later := f.redisNow() + 600_000
	if _, err := f.q.Reschedule(f.ctx, f.tp, ByMember([]byte("moved")), At(MillisTime(later))); err != nil {
		t.Fatal(err)
	}
	if e, _ := f.q.Inspect(f.ctx, f.tp, []byte("moved")); e.State != "retrying" || e.LastError != "nack" || e.Due != MillisTime(later) {
		t.Errorf("rescheduled: %+v", e)
	}
	f.rdb.ZRem(f.ctx, k.Scheduled, "moved")
	if _, err := f.q.Reap(f.ctx, f.tp, 0, 100, "0"); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{k.DeadReason, k.Attempts, k.Due} {
		if n, _ := f.rdb.HLen(f.ctx, key).Result(); n != 0 {
			t.Errorf("%s keeps %d records", key, n)
		}
	}
}

func TestProducersDocScriptsForgetTheLastErrorOfARetryingEnvelope(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	schedule, cancel := docScript(t, "schedule.lua"), docScript(t, "cancel.lua")
	k := f.tp.Keys(0)
	keys := []string{k.Scheduled, k.Inflight, k.Due, k.Attempts, k.IDs, k.Dead, k.DeadReason}
	fail := func(id string) {
		r, err := f.q.Schedule(f.ctx, f.tp, Message{ID: id, Body: []byte("x")}, In(-time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range f.claim(0, 10, time.Minute).Messages {
			f.q.Retry(f.ctx, f.tp, r.Slot, Failure{Member: m.Member, Backoff: time.Hour, Reason: "nack"}, 10)
		}
	}
	fail("replaced")
	if err := schedule.Run(f.ctx, f.rdb, keys, `{"id":"replaced","body":"v2"}`, "replaced", f.redisNow()+60_000).Err(); err != nil {
		t.Fatal(err)
	}
	fail("cancelled")
	if n, err := cancel.Run(f.ctx, f.rdb, keys, "cancelled").Int(); n != 1 || err != nil {
		t.Fatalf("cancel.lua = %d, %v", n, err)
	}
	if n, _ := f.rdb.HLen(f.ctx, k.DeadReason).Result(); n != 0 {
		left, _ := f.rdb.HKeys(f.ctx, k.DeadReason).Result()
		t.Errorf("last errors left: %q", left)
	}
}
