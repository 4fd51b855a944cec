package queue

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// kill schedules a message, claims it and dead-letters it with reason.
func (f *fixture) kill(m Message, reason string) Receipt {
	f.t.Helper()
	r, err := f.q.Schedule(f.ctx, f.tp, m, In(-time.Second))
	if err != nil {
		f.t.Fatal(err)
	}
	var c Claim
	eventually(f.t, "the message is claimed", func() bool {
		c = f.claim(r.Slot, 100, time.Minute)
		return len(c.Messages) > 0
	})
	for _, cm := range c.Messages {
		out, err := f.q.Retry(f.ctx, f.tp, r.Slot, Failure{Member: cm.Member, Permanent: true, Reason: reason}, 10)
		if err != nil || out != Dead {
			f.t.Fatalf("Retry = %v, %v", out, err)
		}
	}
	return r
}

func TestDeadListShowsNewestDeathsFirstWithReasonsAcrossSlots(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	var want []string
	for i := range 6 {
		id := fmt.Sprintf("d%d", i)
		f.kill(Message{ID: id, Body: []byte("x")}, "reason "+id)
		want = append([]string{id}, want...)
		time.Sleep(2 * time.Millisecond) // distinct times of death
	}
	all, err := f.q.DeadList(f.ctx, f.tp, AllSlots, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range all {
		got = append(got, d.ID)
		if d.Reason != "reason "+d.ID || d.Slot != f.tp.SlotOfID(d.ID) || d.Topic != "orders" {
			t.Errorf("entry %+v", d)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	limited, _ := f.q.DeadList(f.ctx, f.tp, AllSlots, 2)
	if len(limited) != 2 || limited[0].ID != want[0] {
		t.Errorf("limit 2: %+v", limited)
	}
	one, _ := f.q.DeadList(f.ctx, f.tp, f.tp.SlotOfID("d3"), 0)
	for _, d := range one {
		if d.Slot != f.tp.SlotOfID("d3") {
			t.Errorf("slot list holds %+v", d)
		}
	}
	if _, err := f.q.DeadList(f.ctx, f.tp, 4, 0); err == nil {
		t.Error("DeadList of slot 4 of 4 accepted")
	}
	if n, _ := f.q.DeadCount(f.ctx, f.tp); n != 6 {
		t.Errorf("DeadCount = %d", n)
	}
}

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

func TestPurgeByMemberByIDAndAllCountsWhatItDeleted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 2)
	a := f.kill(Message{ID: "a", Body: []byte("x")}, "r")
	f.kill(Message{ID: "b", Body: []byte("x")}, "r")
	f.kill(Message{ID: "c", Body: []byte("x")}, "r")
	f.kill(Message{ID: "d", Body: []byte("x")}, "r")

	if n, err := f.q.Purge(f.ctx, f.tp, ByMember([]byte(a.Member))); err != nil || n != 1 {
		t.Fatalf("Purge by member = %d, %v", n, err)
	}
	if n, err := f.q.Purge(f.ctx, f.tp, ByID("b")); err != nil || n != 1 {
		t.Fatalf("Purge by id = %d, %v", n, err)
	}
	if _, err := f.q.Purge(f.ctx, f.tp, ByID("b")); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Purge by id = %v, want ErrNotFound", err)
	}
	if n, err := f.q.Purge(f.ctx, f.tp, Ref{All: true}); err != nil || n != 2 {
		t.Fatalf("Purge all = %d, %v", n, err)
	}
	for s := range 2 {
		k := f.tp.Keys(s)
		if n, _ := f.rdb.Exists(f.ctx, k.Dead, k.DeadReason).Result(); n != 0 {
			t.Errorf("slot %d: dead keys remain", s)
		}
	}
	if _, err := f.q.Purge(f.ctx, f.tp, Ref{ID: "x", All: true}); err == nil {
		t.Error("Purge with two selectors accepted")
	}
}

func TestDeadFindOnRawTopicMatchesTheDeliveredMessageID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 8)
	r := f.kill(Message{Body: []byte(`{"order":9}`)}, "no route")
	found, err := f.q.DeadFind(f.ctx, f.tp, ByID(MessageID([]byte(`{"order":9}`))))
	if err != nil || len(found) != 1 || found[0].Member != `{"order":9}` || found[0].Slot != r.Slot || found[0].Reason != "no route" {
		t.Fatalf("DeadFind = %+v, %v", found, err)
	}
	if n, err := f.q.Purge(f.ctx, f.tp, ByID(found[0].ID)); err != nil || n != 1 {
		t.Errorf("Purge by message id = %d, %v", n, err)
	}
}

func TestDeadFindOfAnInvalidEnvelopeSearchesEverySlot(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	f.rdb.ZAdd(f.ctx, f.tp.Keys(3).Dead, redisZ(1, "not json"))
	found, err := f.q.DeadFind(f.ctx, f.tp, ByMember([]byte("not json")))
	if err != nil || len(found) != 1 || found[0].Slot != 3 || found[0].ID != "" {
		t.Fatalf("DeadFind = %+v, %v", found, err)
	}
	res, err := f.q.Requeue(f.ctx, f.tp, ByMember([]byte("not json")))
	if err != nil || res.Requeued != 1 {
		t.Fatalf("Requeue = %+v, %v", res, err)
	}
	if _, ok := f.zscore(f.tp.Keys(3).Scheduled, "not json"); !ok {
		t.Error("not requeued in its own slot")
	}
}
