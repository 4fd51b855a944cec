package queue

import (
	"errors"
	"testing"
	"time"
)

// A resized topic keeps messages in their old slots: lookups by id or
// member still find them there.
func TestLookupsFindMessagesInTheSlotsOfAnotherSlotCount(t *testing.T) {
	for _, resize := range [][2]int{{8, 4}, {4, 16}, {1, 8}} {
		f := newFixture(t, FormatEnvelope, resize[0])
		ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
		for _, id := range ids {
			if _, err := f.q.Schedule(f.ctx, f.tp, Message{ID: id}, In(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		now := f.tp
		now.Slots = resize[1]
		for i, id := range ids {
			in, err := f.q.Get(f.ctx, now, id)
			if err != nil || in.Slot != f.tp.SlotOfID(id) {
				t.Errorf("%v: Get(%s) = slot %d, %v; want slot %d", resize, id, in.Slot, err, f.tp.SlotOfID(id))
			}
			switch i % 3 {
			case 0:
				if ok, err := f.q.CancelID(f.ctx, now, id); !ok || err != nil {
					t.Errorf("%v: CancelID(%s) = %v, %v", resize, id, ok, err)
				}
			case 1:
				if r, err := f.q.Reschedule(f.ctx, now, ByID(id), In(2*time.Hour)); err != nil || r.Slot != f.tp.SlotOfID(id) {
					t.Errorf("%v: Reschedule(%s) = %+v, %v", resize, id, r, err)
				}
			}
		}
		if _, err := f.q.Get(f.ctx, now, "never"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(never) = %v, want ErrNotFound", err)
		}
	}
}

func TestCancelRawMemberInTheSlotOfAnotherSlotCount(t *testing.T) {
	f := newFixture(t, FormatRaw, 8)
	for i := range 16 {
		if _, err := f.q.ScheduleMember(f.ctx, f.tp, []byte{'m', byte('a' + i)}, In(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	now := f.tp
	now.Slots = 2
	for i := range 16 {
		if ok, err := f.q.Cancel(f.ctx, now, []byte{'m', byte('a' + i)}); !ok || err != nil {
			t.Errorf("Cancel(m%c) = %v, %v", 'a'+i, ok, err)
		}
	}
}
