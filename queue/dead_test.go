package queue

import (
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
