package queue

import (
	"testing"
	"time"
)

func TestBuryDeadLettersWithReasonAndLeavesTheScheduledCopy(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	good, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "m1", Body: []byte("good")}, In(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := EncodeEnvelope(Message{ID: "m1", Body: []byte("bad")})
	slot, err := f.q.Bury(f.ctx, f.tp, bad, "x-delay is not a number")
	if err != nil {
		t.Fatal(err)
	}
	if slot != f.tp.SlotOfID("m1") {
		t.Errorf("slot %d, want the id's %d", slot, f.tp.SlotOfID("m1"))
	}
	dead, err := f.q.DeadList(f.ctx, f.tp, AllSlots, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].Member != string(bad) || dead[0].Reason != "x-delay is not a number" || dead[0].ID != "m1" {
		t.Errorf("dead = %+v", dead)
	}
	if n, _ := f.rdb.ZCard(f.ctx, f.tp.Keys(good.Slot).Scheduled).Result(); n != 1 {
		t.Errorf("scheduled = %d, want the good copy kept", n)
	}
	if m, _ := f.idNames(good.Slot, "m1"); m != good.Member {
		t.Errorf("ids[m1] = %q, want the scheduled member", m)
	}
}
