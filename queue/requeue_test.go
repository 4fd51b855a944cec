package queue

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestRequeueFromDeadPutsMessageBackDueNowWithAttemptsReset(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 2)
	k := f.tp.Keys(Slot([]byte("m"), 2))
	r, _ := f.q.Schedule(f.ctx, f.tp, Message{Body: []byte("m")}, In(-time.Second))
	for attempt := 1; attempt <= 3; attempt++ {
		eventually(t, "the retry is due", func() bool { return len(f.claim(r.Slot, 1, time.Minute).Messages) == 1 })
		f.q.Retry(f.ctx, f.tp, r.Slot, Failure{Member: "m", Backoff: time.Millisecond, Reason: "nack"}, 3)
	}
	if _, ok := f.zscore(k.Dead, "m"); !ok {
		t.Fatal("m did not die")
	}
	before := f.redisNow()
	res, err := f.q.Requeue(f.ctx, f.tp, ByMember([]byte("m")))
	if err != nil || res.Requeued != 1 {
		t.Fatalf("Requeue = %+v, %v", res, err)
	}
	if s, ok := f.zscore(k.Scheduled, "m"); !ok || s < before || s > f.redisNow() {
		t.Errorf("m scheduled at %v (%v), want Redis's now", s, ok)
	}
	for _, key := range []string{k.Attempts, k.DeadReason} {
		if _, ok := f.hget(key, "m"); ok {
			t.Errorf("%s still holds m", key)
		}
	}
	if f.zcard(k.Dead) != 0 {
		t.Error("m is still dead")
	}
	c := f.claim(r.Slot, 1, time.Minute)
	if len(c.Messages) != 1 || c.Messages[0].Attempts != 0 {
		t.Errorf("claim after requeue = %+v, want 0 attempts", c.Messages)
	}
	if _, err := f.q.Requeue(f.ctx, f.tp, ByMember([]byte("m"))); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Requeue = %v, want ErrNotFound", err)
	}
}

func TestRequeueAllMovesEveryDeadMessageOfEverySlot(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 4)
	for s := range 4 {
		k := f.tp.Keys(s)
		for i := range 700 { // more than one page
			m := fmt.Sprintf("s%d-%d", s, i)
			f.rdb.ZAdd(f.ctx, k.Dead, redisZ(float64(i), m))
			f.rdb.HSet(f.ctx, k.DeadReason, m, "old")
		}
	}
	res, err := f.q.Requeue(f.ctx, f.tp, Ref{All: true})
	if err != nil || res.Requeued != 2800 || res.Skipped != 0 {
		t.Fatalf("Requeue all = %+v, %v", res, err)
	}
	for s := range 4 {
		k := f.tp.Keys(s)
		if f.zcard(k.Dead) != 0 || f.zcard(k.Scheduled) != 700 {
			t.Errorf("slot %d: %d dead, %d scheduled", s, f.zcard(k.Dead), f.zcard(k.Scheduled))
		}
	}
}

func TestRequeueSkipsADeadVersionWhoseIDWasScheduledAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	old := f.kill(Message{ID: "a", Body: []byte("v1")}, "rejected")
	newer, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "a", Body: []byte("v2")}, In(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.q.Requeue(f.ctx, f.tp, ByID("a"))
	if err != nil || res.Requeued != 0 || res.Skipped != 1 {
		t.Fatalf("Requeue = %+v, %v; want it skipped", res, err)
	}
	if _, ok := f.zscore(f.tp.Keys(0).Dead, old.Member); !ok {
		t.Error("the skipped version left the dead set")
	}
	if info, _ := f.q.Get(f.ctx, f.tp, "a"); info.Member != newer.Member {
		t.Errorf("id names %s, want the newer version", info.Member)
	}
	f.checkIndex()
}

func TestRequeueByIDTakesTheNewestDeadVersion(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	f.kill(Message{ID: "a", Body: []byte("v1")}, "first")
	time.Sleep(2 * time.Millisecond)
	v2 := f.kill(Message{ID: "a", Body: []byte("v2")}, "second")
	res, err := f.q.Requeue(f.ctx, f.tp, ByID("a"))
	if err != nil || res.Requeued != 1 || res.Skipped != 1 {
		t.Fatalf("Requeue = %+v, %v", res, err)
	}
	if info, _ := f.q.Get(f.ctx, f.tp, "a"); info.Member != v2.Member {
		t.Errorf("requeued %s, want the newest version", info.Member)
	}
	f.checkIndex()
}

func TestRequeueOfEnvelopeIndexesItAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	m, slot := f.scheduleNow("a", "x")
	f.claim(slot, 1, time.Minute)
	f.q.Retry(f.ctx, f.tp, slot, Failure{Member: m, Permanent: true, Reason: "no route"}, 5)
	if _, ok := f.idNames(slot, "a"); ok {
		t.Fatal("a dead message kept its id")
	}
	r, err := f.q.Requeue(f.ctx, f.tp, ByID("a"))
	if err != nil || r.Requeued != 1 {
		t.Fatalf("Requeue = %+v, %v", r, err)
	}
	if info, err := f.q.Get(f.ctx, f.tp, "a"); err != nil || info.State != StateScheduled || info.Attempts != 0 {
		t.Errorf("Get after requeue = %+v, %v", info, err)
	}
	f.checkIndex()
}
