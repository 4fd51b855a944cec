package queue

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

func TestScheduleSameIDTwiceKeepsOneMessageAtTheLaterTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	first := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	second := first.Add(24 * time.Hour)
	r1, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "order-42", Body: []byte("v1")}, At(first))
	if err != nil || r1.Replaced != ReplacedNothing {
		t.Fatalf("first Schedule = %+v, %v", r1, err)
	}
	r2, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "order-42", Body: []byte("v2")}, At(second))
	if err != nil || r2.Replaced != ReplacedScheduled {
		t.Fatalf("second Schedule = %+v, %v; want it to replace the scheduled one", r2, err)
	}
	k := f.tp.Keys(r2.Slot)
	zs, err := f.rdb.ZRangeWithScores(f.ctx, k.Scheduled, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := []redis.Z{{Member: r2.Member, Score: float64(second.UnixMilli())}}
	if diff := cmp.Diff(want, zs); diff != "" {
		t.Fatalf("scheduled (-want +got):\n%s", diff)
	}
	info, err := f.q.Get(f.ctx, f.tp, "order-42")
	if err != nil || string(info.Message.Body) != "v2" || !info.Due.Equal(second) {
		t.Errorf("Get = %+v, %v; want v2 due %v", info, err, second)
	}
	f.checkIndex()
}

func TestScheduleSameEnvelopeTwiceMovesItAndResetsItsAttempts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	m, _ := f.scheduleNow("a", "x")
	f.claim(0, 1, time.Minute)
	if _, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: m, Backoff: time.Hour}, 5); err != nil {
		t.Fatal(err)
	}
	m2, _ := f.scheduleNow("a", "x")
	if m2 != m {
		t.Fatalf("same message encoded differently: %s vs %s", m, m2)
	}
	c := f.claim(0, 1, time.Minute)
	if len(c.Messages) != 1 || c.Messages[0].Attempts != 0 {
		t.Fatalf("claim after rescheduling = %+v, want a fresh message", c.Messages)
	}
	f.checkIndex()
}

func TestScheduleIDWhileInFlightSchedulesNewOneAndOldDeliveryIsNeverRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	old, _ := f.scheduleNow("a", "v1")
	c := f.claim(0, 1, time.Millisecond)
	if len(c.Messages) != 1 {
		t.Fatal("nothing claimed")
	}
	r, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "a", Body: []byte("v2")}, In(time.Hour))
	if err != nil || r.Replaced != ReplacedInFlight {
		t.Fatalf("Schedule = %+v, %v; want it to supersede the in-flight one", r, err)
	}
	// The old delivery goes on: its ack, retry, release and the reaper leave
	// the new message alone and do not bring the old one back.
	if out, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: old, Backoff: time.Millisecond}, 5); err != nil || out != NotInflight {
		t.Errorf("Retry of the superseded delivery = %v, %v", out, err)
	}
	if n, _ := f.q.Release(f.ctx, f.tp, 0, []string{old}); n != 0 {
		t.Errorf("Release of the superseded delivery returned %d", n)
	}
	if n, _ := f.q.Ack(f.ctx, f.tp, 0, []string{old}); n != 0 {
		t.Errorf("Ack of the superseded delivery returned %d", n)
	}
	time.Sleep(5 * time.Millisecond) // past the old lease
	if rr, _ := f.q.Reap(f.ctx, f.tp, 0, 100, "0"); rr.Reaped != 0 {
		t.Errorf("Reap brought back %d", rr.Reaped)
	}
	k := f.tp.Keys(0)
	ms, _ := f.rdb.ZRange(f.ctx, k.Scheduled, 0, -1).Result()
	if diff := cmp.Diff([]string{r.Member}, ms); diff != "" {
		t.Errorf("scheduled (-want +got):\n%s", diff)
	}
	for _, key := range []string{k.Due, k.Attempts} {
		if _, ok := f.hget(key, old); ok {
			t.Errorf("%s still holds the superseded member", key)
		}
	}
	f.checkIndex()
}

func TestSchedulePutsRawMemberInItsCRC32Slot(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 16)
	due := time.UnixMilli(4102444800000) // 2100-01-01
	for i := range 20 {
		body := fmt.Sprintf(`{"order":%d}`, i)
		r, err := f.q.Schedule(f.ctx, f.tp, Message{Body: []byte(body)}, At(due))
		if err != nil {
			t.Fatal(err)
		}
		want := Slot([]byte(body), 16)
		if r.Slot != want || r.ID != MessageID([]byte(body)) || r.Score != 4102444800000 {
			t.Errorf("receipt %+v, want slot %d", r, want)
		}
		if s, ok := f.zscore(f.tp.Keys(want).Scheduled, body); !ok || s != 4102444800000 {
			t.Errorf("%s not in slot %d at the due time", body, want)
		}
	}
	if _, err := f.q.ScheduleMember(f.ctx, f.tp, []byte("plain"), At(due.Add(time.Hour))); err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	if _, ok := f.zscore(f.tp.Keys(Slot([]byte("plain"), 16)).Scheduled, "plain"); !ok {
		t.Error("Schedule did not write the member")
	}
}

func TestScheduleRefusesDueTimesThatCannotBeHonoured(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	for name, w := range map[string]When{
		"before 1970":       At(time.Unix(-1, 0)),
		"past 2^53 ms":      At(time.UnixMilli(1<<53 + 2)),
		"delay before 1970": In(-100 * 365 * 24 * time.Hour),
	} {
		_, err := f.q.Schedule(f.ctx, f.tp, Message{Body: []byte(name)}, w)
		if err == nil || !strings.Contains(err.Error(), "honoured") {
			t.Errorf("%s: Schedule(%v) = %v, want a refusal", name, w, err)
		}
		if !errors.Is(err, ErrBadDueTime) {
			t.Errorf("%s: %v does not wrap ErrBadDueTime", name, err)
		}
	}
	if n := f.zcard(f.tp.Keys(0).Scheduled); n != 0 {
		t.Errorf("%d refused messages were written", n)
	}
}

func TestScheduleOnRawTopicRefusesEnvelopeFields(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	_, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "a", Body: []byte("x")}, In(time.Hour))
	if !errors.Is(err, ErrNotEnvelope) {
		t.Errorf("Schedule with id on raw topic = %v, want ErrNotEnvelope", err)
	}
	if _, err := f.q.CancelID(f.ctx, f.tp, "a"); !errors.Is(err, ErrNotEnvelope) {
		t.Errorf("CancelID on raw topic = %v", err)
	}
	if _, err := f.q.Get(f.ctx, f.tp, "a"); !errors.Is(err, ErrNotEnvelope) {
		t.Errorf("Get on raw topic = %v", err)
	}
}

func TestScheduleOnEnvelopeTopicNeedsAValidEnvelope(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 2)
	if _, err := f.q.Schedule(f.ctx, f.tp, Message{Body: []byte("no id")}, In(time.Hour)); !errors.Is(err, ErrInvalidEnvelope) {
		t.Errorf("no id: %v", err)
	}
	if _, err := f.q.ScheduleMember(f.ctx, f.tp, []byte(`{"order":1}`), At(time.Now())); !errors.Is(err, ErrInvalidEnvelope) {
		t.Errorf("Schedule of a non-envelope member: %v", err)
	}
	member := []byte(`{"id":"hand-written","body":{"order":1},"headers":{"k":"v"}}`)
	if _, err := f.q.ScheduleMember(f.ctx, f.tp, member, At(time.Now().Add(time.Hour))); err != nil {
		t.Fatalf("Schedule of a hand-written envelope: %v", err)
	}
	info, err := f.q.Get(f.ctx, f.tp, "hand-written")
	if err != nil || string(info.Message.Body) != `{"order":1}` || info.Message.Headers["k"] != "v" || info.Member != string(member) {
		t.Errorf("Get = %+v, %v", info, err)
	}
	f.checkIndex()
}

func TestScheduleCarriesBinaryBodies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	body := []byte{0, 1, 2, 0xff, 0xfe, '"', '\\'}
	if _, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "bin", Body: body}, In(-time.Second)); err != nil {
		t.Fatal(err)
	}
	c := f.claim(0, 1, time.Minute)
	m, err := f.tp.Decode(c.Messages[0].Member)
	if err != nil || string(m.Body) != string(body) || m.ID != "bin" {
		t.Errorf("decoded %+v, %v", m, err)
	}
}

func TestSchedulePublishesAWakeUpWithTopicSlotAndScore(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 8)
	sub := f.rdb.Subscribe(f.ctx, WakeChannel(f.tp.Prefix))
	defer sub.Close()
	if _, err := sub.Receive(f.ctx); err != nil { // the subscription is confirmed
		t.Fatal(err)
	}
	r, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "w", Body: []byte("x")}, In(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := sub.ReceiveMessage(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ParseWake(msg.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Wake{Topic: "orders", Slot: r.Slot, Score: r.Score}, w); diff != "" {
		t.Errorf("wake-up (-want +got):\n%s", diff)
	}
	if _, err := f.q.Reschedule(f.ctx, f.tp, ByID("w"), In(time.Second)); err != nil {
		t.Fatal(err)
	}
	msg, err = sub.ReceiveMessage(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := ParseWake(msg.Payload); w.Slot != r.Slot || w.Score >= r.Score {
		t.Errorf("reschedule wake-up %+v, want slot %d earlier than %v", w, r.Slot, r.Score)
	}
}
