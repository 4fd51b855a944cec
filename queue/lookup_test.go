package queue

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestGetReportsScheduledRetryingAndInFlight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	msg := Message{ID: "g", Body: []byte("x"), Headers: map[string]string{"h": "1"}, RoutingKey: "rk"}
	r, err := f.q.Schedule(f.ctx, f.tp, msg, In(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	info, err := f.q.Get(f.ctx, f.tp, "g")
	if err != nil || info.State != StateScheduled || info.Due != r.Due() || info.Slot != r.Slot {
		t.Fatalf("Get = %+v, %v", info, err)
	}
	if diff := cmp.Diff(msg, info.Message); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	f.claim(r.Slot, 1, time.Minute)
	info, _ = f.q.Get(f.ctx, f.tp, "g")
	if info.State != StateInFlight || info.Due != r.Due() || time.Until(info.LeaseUntil) < 30*time.Second {
		t.Errorf("in flight: %+v", info)
	}
	f.q.Retry(f.ctx, f.tp, r.Slot, Failure{Member: r.Member, Backoff: time.Hour}, 5)
	info, _ = f.q.Get(f.ctx, f.tp, "g")
	if info.State != StateRetrying || info.Attempts != 1 || time.Until(info.Due) < 30*time.Minute {
		t.Errorf("retrying: %+v", info)
	}
	if _, err := f.q.Get(f.ctx, f.tp, "unknown"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get unknown = %v", err)
	}
	if _, err := f.q.Get(f.ctx, f.tp, ""); !errors.Is(err, ErrInvalidEnvelope) {
		t.Errorf("Get empty id = %v", err)
	}
}
