package queue

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCancelByIDOfClaimedMessageReportsInFlightAndChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 8)
	m, slot := f.scheduleNow("order-7", "x")
	f.claim(slot, 10, time.Minute)
	k := f.tp.Keys(slot)
	before := f.dump(slot)

	ok, err := f.q.CancelID(f.ctx, f.tp, "order-7")
	if ok || !errors.Is(err, ErrInFlight) {
		t.Fatalf("CancelID = %v, %v; want ErrInFlight", ok, err)
	}
	if _, err := f.q.Cancel(f.ctx, f.tp, []byte(m)); !errors.Is(err, ErrInFlight) {
		t.Fatalf("Cancel by member = %v; want ErrInFlight", err)
	}
	if _, err := f.q.Reschedule(f.ctx, f.tp, ByID("order-7"), In(time.Hour)); !errors.Is(err, ErrInFlight) {
		t.Fatalf("Reschedule = %v; want ErrInFlight", err)
	}
	if diff := cmp.Diff(before, f.dump(slot)); diff != "" {
		t.Errorf("keys changed (-before +after):\n%s", diff)
	}
	if _, ok := f.zscore(k.Inflight, m); !ok {
		t.Error("the message left the in-flight set")
	}
	f.checkIndex()
}

func TestCancelByIDRemovesTheMessageAndItsID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	if _, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "a", Body: []byte("x")}, In(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.q.CancelID(f.ctx, f.tp, "a"); !ok || err != nil {
		t.Fatalf("CancelID = %v, %v", ok, err)
	}
	if ok, err := f.q.CancelID(f.ctx, f.tp, "a"); ok || err != nil {
		t.Fatalf("second CancelID = %v, %v; want not found", ok, err)
	}
	if _, err := f.q.Get(f.ctx, f.tp, "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after cancel = %v, want ErrNotFound", err)
	}
	f.checkIndex()
}

func TestCancelByMemberOfEnvelopeDropsItsID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	r, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "a", Body: []byte("x")}, In(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := f.q.Cancel(f.ctx, f.tp, []byte(r.Member)); !ok || err != nil {
		t.Fatalf("Cancel = %v, %v", ok, err)
	}
	if _, ok := f.idNames(r.Slot, "a"); ok {
		t.Error("the id survived the cancel")
	}
}
