package queue

import (
	"errors"
	"testing"
	"time"
)

func TestRescheduleMovesAScheduledMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 4)
	if _, err := f.q.Schedule(f.ctx, f.tp, Message{Body: []byte("m")}, In(time.Hour)); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(48 * time.Hour).Truncate(time.Millisecond)
	r, err := f.q.Reschedule(f.ctx, f.tp, ByMember([]byte("m")), At(at))
	if err != nil || !r.Due().Equal(at) || r.Member != "m" {
		t.Fatalf("Reschedule = %+v, %v", r, err)
	}
	if s, _ := f.zscore(f.tp.Keys(r.Slot).Scheduled, "m"); s != float64(at.UnixMilli()) {
		t.Errorf("score %v", s)
	}
	if _, err := f.q.Reschedule(f.ctx, f.tp, ByMember([]byte("unknown")), In(time.Hour)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Reschedule of unknown = %v, want ErrNotFound", err)
	}
	if _, err := f.q.Reschedule(f.ctx, f.tp, Ref{}, In(time.Hour)); err == nil {
		t.Error("Reschedule of nothing accepted")
	}
}

func TestRescheduleByIDOfMessageWaitingToRetryKeepsAttemptsAndTakesNewDue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	m, _ := f.scheduleNow("a", "x")
	f.claim(0, 1, time.Minute)
	f.q.Retry(f.ctx, f.tp, 0, Failure{Member: m, Backoff: time.Hour}, 5)
	r, err := f.q.Reschedule(f.ctx, f.tp, ByID("a"), In(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c := f.claim(0, 1, time.Minute)
	if len(c.Messages) != 1 || c.Messages[0].Attempts != 1 || c.Messages[0].Due != r.Score {
		t.Errorf("claim = %+v, want attempts 1 due %v", c.Messages, r.Score)
	}
	if _, err := f.q.Reschedule(f.ctx, f.tp, ByID("nope"), In(time.Hour)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Reschedule of unknown id = %v", err)
	}
	f.checkIndex()
}
