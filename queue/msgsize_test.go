package queue_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestScheduleRefusesBodiesOverTheTopicLimit: every way in of the Go API
// refuses a body over Topic.MaxMessageSize with a *TooLargeError naming both
// sizes, and writes nothing; a body at the limit is taken.
func TestScheduleRefusesBodiesOverTheTopicLimit(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	ctx := t.Context()
	q := queue.New(rdb)
	for _, format := range []queue.Format{queue.FormatRaw, queue.FormatEnvelope} {
		tp := queue.Topic{Name: "size-" + string(format), Prefix: prefix, Format: format, MaxMessageSize: 10}
		msg := func(id string, n int) queue.Message {
			m := queue.Message{Body: bytes.Repeat([]byte{1}, n)}
			if format == queue.FormatEnvelope {
				m.ID = id
			}
			return m
		}
		big := msg("big", 11)
		member, err := tp.Encode(big)
		if err != nil {
			t.Fatal(err)
		}
		var tl *queue.TooLargeError
		_, err = q.Schedule(ctx, tp, big, queue.In(time.Hour))
		if !errors.As(err, &tl) || tl.Size != 11 || tl.Limit != 10 || !errors.Is(err, queue.ErrTooLarge) {
			t.Errorf("%s: Schedule of 11 bytes: %v; want a TooLargeError of 11 over 10", format, err)
		}
		if _, err := q.ScheduleMember(ctx, tp, member, queue.In(time.Hour)); !errors.Is(err, queue.ErrTooLarge) {
			t.Errorf("%s: ScheduleMember: %v; want ErrTooLarge", format, err)
		}
		_, errs := q.ScheduleEach(ctx, tp, []queue.Item{{Message: big}, {Message: msg("ok", 10)}})
		if !errors.Is(errs[0], queue.ErrTooLarge) || errs[1] != nil {
			t.Errorf("%s: ScheduleEach = %v; want ErrTooLarge for the first item alone", format, errs)
		}
		if _, err := q.ScheduleBatch(ctx, tp, []queue.Item{{Message: big}}); !errors.Is(err, queue.ErrTooLarge) {
			t.Errorf("%s: ScheduleBatch: %v; want ErrTooLarge", format, err)
		}
		if n := rdb.ZCard(ctx, tp.Keys(0).Scheduled).Val(); n != 1 {
			t.Errorf("%s: %d scheduled; want 1 (the body at the limit)", format, n)
		}
	}
	tp := queue.Topic{Name: "size-recur", Prefix: prefix, Format: queue.FormatEnvelope, MaxMessageSize: 10}
	_, err := q.SetRecurrence(ctx, tp, queue.Recurrence{ID: "r", Spec: "@every 1h", Message: queue.Message{Body: make([]byte, 11)}})
	if !errors.Is(err, queue.ErrTooLarge) {
		t.Errorf("SetRecurrence: %v; want ErrTooLarge", err)
	}
}

// TestEscapedEnvelopeWithinTheLimitIsTaken: the limit counts the body's
// bytes, not its envelope's: a body of control bytes, whose JSON escapes
// make the member six times larger, is taken at the limit.
func TestEscapedEnvelopeWithinTheLimitIsTaken(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	q := queue.New(rdb)
	tp := queue.Topic{Name: "size-escaped", Prefix: prefix, Format: queue.FormatEnvelope, MaxMessageSize: 100}
	member, err := tp.Encode(queue.Message{ID: "c", Body: bytes.Repeat([]byte{1}, 100)})
	if err != nil || len(member) <= 100 {
		t.Fatalf("Encode = %d bytes, %v; want an envelope over the limit", len(member), err)
	}
	if _, err := q.ScheduleMember(t.Context(), tp, member, queue.In(time.Hour)); err != nil {
		t.Errorf("ScheduleMember of a 100-byte body: %v; want it taken", err)
	}
}
