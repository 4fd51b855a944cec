package queue

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestScheduleRefusesSettingsThatDisagreeWithTheRegistry(t *testing.T) {
	f := newFixture(t, FormatEnvelope, 4) // the producer thinks 4 slots
	if _, err := f.q.Register(f.ctx, f.tp.Prefix, "a", layouts(f.tp.Prefix)); err != nil {
		t.Fatal(err)
	}
	_, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "x", Body: []byte("b")}, In(time.Hour))
	if !errors.Is(err, ErrLayoutMismatch) {
		t.Fatalf("Schedule = %v, want ErrLayoutMismatch", err)
	}
	for _, s := range []string{"slots=4", "slots=8 format=envelope sink=amqp exchange=events"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
	_, err = f.q.ScheduleBatch(f.ctx, f.tp, []Item{{Message: Message{ID: "y"}}})
	if !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("ScheduleBatch = %v, want ErrLayoutMismatch", err)
	}
	// Every producer call checks as Schedule does: Reschedule reported "no
	// such message" and CancelID false without an error.
	if _, err := f.q.Reschedule(f.ctx, f.tp, ByID("x"), In(time.Hour)); !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("Reschedule = %v, want ErrLayoutMismatch", err)
	}
	if _, err := f.q.CancelID(f.ctx, f.tp, "x"); !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("CancelID = %v, want ErrLayoutMismatch", err)
	}
	if _, err := f.q.Cancel(f.ctx, f.tp, []byte(`{"id":"x","body":"b"}`)); !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("Cancel = %v, want ErrLayoutMismatch", err)
	}
	if _, err := f.q.Get(f.ctx, f.tp, "x"); !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("Get = %v, want ErrLayoutMismatch", err)
	}
	raw := f.tp
	raw.Slots, raw.Format = 8, FormatRaw
	if err := f.q.CheckTopic(f.ctx, raw); !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("CheckTopic(raw) = %v, want ErrLayoutMismatch", err)
	}
	for i := range 8 {
		if n := f.zcard(f.tp.Keys(i).Scheduled); n != 0 {
			t.Errorf("slot %d holds %d messages after a refusal", i, n)
		}
	}
	right, err := f.q.Topic(f.ctx, f.tp.Prefix, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.Schedule(f.ctx, right, Message{ID: "x"}, In(time.Hour)); err != nil {
		t.Errorf("Schedule with the registry's layout: %v", err)
	}
	unregistered := Topic{Name: "new", Prefix: f.tp.Prefix, Slots: 2}
	if _, err := f.q.Schedule(f.ctx, unregistered, Message{Body: []byte("b")}, In(time.Hour)); err != nil {
		t.Errorf("Schedule on a topic not registered yet: %v", err)
	}
}
