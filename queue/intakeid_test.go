package queue

import (
	"errors"
	"testing"
	"time"
)

// TestAProducerCannotNameTheIdsIntakesGenerate: an id of the intakes' form
// ("~…", IntakeID) is refused at every producer's way of scheduling, so no
// writer of a topic can take, through the dedup window, the id an intake
// gives a message later; the intake's own way accepts it, and the message
// is found and cancelled by it like any other.
func TestAProducerCannotNameTheIdsIntakesGenerate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 2)
	for _, id := range []string{IntakeID("kafka", "orders/0/7"), IntakeID("amqp", "ab12"), "~", "~anything"} {
		m := Message{ID: id, Body: []byte("early")}
		if _, err := f.q.Schedule(f.ctx, f.tp, m, In(time.Hour)); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("Schedule(%q) = %v, want ErrInvalidEnvelope", id, err)
		}
		if _, err := f.tp.Encode(m); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("Encode(%q) = %v, want ErrInvalidEnvelope", id, err)
		}
		member := `{"id":"` + id + `","body":"early"}`
		if _, err := f.q.ScheduleMember(f.ctx, f.tp, []byte(member), In(time.Hour)); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("ScheduleMember(%s) = %v, want ErrInvalidEnvelope", member, err)
		}
		if _, err := f.q.ScheduleBatch(f.ctx, f.tp, []Item{{Message: m, When: In(time.Hour)}}); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("ScheduleBatch(%q) = %v, want ErrInvalidEnvelope", id, err)
		}
		_, errs := f.q.ScheduleEach(f.ctx, f.tp, []Item{{Message: m, When: In(time.Hour)}})
		if len(errs) != 1 || !errors.Is(errs[0], ErrInvalidEnvelope) {
			t.Errorf("ScheduleEach(%q) = %v, want ErrInvalidEnvelope", id, errs)
		}
	}
	if n := f.zcard(f.tp.Keys(0).Scheduled) + f.zcard(f.tp.Keys(1).Scheduled); n != 0 {
		t.Fatalf("%d members written by refused schedules", n)
	}

	id := IntakeID("kafka", "orders/0/7")
	_, errs := f.q.ScheduleIntake(f.ctx, f.tp, []Item{{Message: Message{ID: id, Body: []byte("real")}, When: In(time.Hour)}})
	if errs[0] != nil {
		t.Fatalf("ScheduleIntake(%q) = %v", id, errs[0])
	}
	if _, err := f.tp.EncodeIntake(Message{ID: id, Body: []byte("real")}); err != nil {
		t.Errorf("EncodeIntake(%q) = %v", id, err)
	}
	e, err := f.q.InspectID(f.ctx, f.tp, id)
	if err != nil || e.Member == "" {
		t.Fatalf("InspectID(%q) = %+v, %v", id, e, err)
	}
	if ok, err := f.q.CancelID(f.ctx, f.tp, id); !ok || err != nil {
		t.Errorf("CancelID(%q) = %v, %v", id, ok, err)
	}
	// Ids of the forms intakes generated before (a bare hex SHA-256,
	// <topic>/<partition>/<offset>) are a producer's like any other.
	for _, old := range []string{"orders/0/7", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"} {
		if _, err := f.q.Schedule(f.ctx, f.tp, Message{ID: old, Body: []byte("b")}, In(time.Hour)); err != nil {
			t.Errorf("Schedule(%q) = %v", old, err)
		}
	}
}
