package queue

import (
	"errors"
	"testing"
	"time"
)

// TestAMessageIDCannotImpersonateATick: an id of a tick's form
// ("<recurrence>@<ms>") is refused at every way of scheduling, so get and
// cancel of a tick id find the tick, and no message shares a tick's id.
func TestAMessageIDCannotImpersonateATick(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 2)
	next, err := f.q.SetRecurrence(f.ctx, f.tp, Recurrence{ID: "hb", Spec: "@every 1h", Message: Message{Body: []byte("beat")}})
	if err != nil {
		t.Fatal(err)
	}
	fake := TickID("hb", next)
	for _, id := range []string{fake, "hb@1", "other@0", "a@b@123"} {
		if _, err := f.q.Schedule(f.ctx, f.tp, Message{ID: id, Body: []byte("fake")}, In(time.Hour)); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("Schedule(%q) = %v, want ErrInvalidEnvelope", id, err)
		}
		member := `{"id":"` + id + `","body":"fake"}`
		if _, err := f.q.ScheduleMember(f.ctx, f.tp, []byte(member), In(time.Hour)); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("ScheduleMember(%s) = %v, want ErrInvalidEnvelope", member, err)
		}
		_, errs := f.q.ScheduleEach(f.ctx, f.tp, []Item{{Message: Message{ID: id, Body: []byte("fake")}, When: In(time.Hour)}})
		if len(errs) != 1 || !errors.Is(errs[0], ErrInvalidEnvelope) {
			t.Errorf("ScheduleEach(%q) = %v, want ErrInvalidEnvelope", id, errs)
		}
	}
	// Not the form: an at sign without digits after it, or at the start.
	for _, id := range []string{"user@example.com", "@123", "hb@", "hb@12x", "hb@-1"} {
		if _, err := f.q.Schedule(f.ctx, f.tp, Message{ID: id, Body: []byte("ok")}, In(time.Hour)); err != nil {
			t.Errorf("Schedule(%q) = %v", id, err)
		}
	}
	e, err := f.q.InspectID(f.ctx, f.tp, fake)
	if err != nil || !IsTick(e.Member) {
		t.Fatalf("InspectID(%s) = %q, %v: want the tick", fake, e.Member, err)
	}
	if ok, err := f.q.CancelID(f.ctx, f.tp, fake); ok || err == nil {
		t.Errorf("CancelID of the tick id = %v, %v: want a refusal (remove the recurrence)", ok, err)
	}
	if n, _ := f.rdb.ZCard(f.ctx, f.tp.Keys(f.tp.SlotOfID("hb")).Scheduled).Result(); n < 1 {
		t.Errorf("the tick is gone: %d members", n)
	}
}
