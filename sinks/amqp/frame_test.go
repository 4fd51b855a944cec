package amqp

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/sinks"
)

// bigHeaderMessages are a message whose one header (200 KB) cannot fit
// RabbitMQ's default frame (128 KiB) and an ordinary one behind it.
func bigHeaderMessages() []sinks.Message {
	now := time.Now()
	return []sinks.Message{
		{ID: "big", Topic: "t", Body: []byte("big"), Due: now, Attempt: 1,
			Headers: map[string]string{"h": strings.Repeat("x", 200<<10)}},
		{ID: "small", Topic: "t", Body: []byte("small"), Due: now, Attempt: 1},
	}
}

// TestHeaderBeyondTheFrameIsRefusedPermanentlyWithoutDroppingTheConnection:
// a message whose headers exceed the negotiated frame_max fails alone, as a
// permanent error naming the frame size (dead-lettered at once), before it
// is written; the message behind it is confirmed and the connection stays
// up. Before, the broker closed the connection (501 FRAME_ERROR) and the
// message went back "without an attempt", stalling its slot forever.
func TestHeaderBeyondTheFrameIsRefusedPermanentlyWithoutDroppingTheConnection(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	s := newSink(t, testURL(), d, 0)
	c := d.consume(t)
	sess, _ := s.session()
	errs := sinks.Results(publish(t, s, bigHeaderMessages()), 2)
	if !errors.Is(errs[0], sinks.ErrPermanent) || !strings.Contains(errs[0].Error(), "frame") {
		t.Fatalf("big header: got %v, want a permanent error naming the frame size", errs[0])
	}
	if errs[1] != nil {
		t.Fatalf("the message behind it: %v, want confirmed", errs[1])
	}
	if got := c.next(t, 1, 10*time.Second); string(got[0].Body) != "small" {
		t.Fatalf("delivered %q, want small", got[0].Body)
	}
	if now, err := s.session(); err != nil || now != sess {
		t.Fatalf("the connection was replaced or lost (%v): a refused header must not drop it", err)
	}
}

// TestMessageThatBreaksTheConnectionIsChargedAnAttempt: when the broker
// does close the connection over a frame (here the sink's own check is
// skipped, as for a broker whose limit it could not know), the message with
// the largest header fails with the broker's reason, which counts an
// attempt, so it reaches the dead set after the last one; the others go back
// without one.
func TestMessageThatBreaksTheConnectionIsChargedAnAttempt(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	s := newSink(t, testURL(), d, 0)
	s.skipFrameCheck = true
	errs := sinks.Results(publish(t, s, bigHeaderMessages()), 2)
	if errs[0] == nil || errors.Is(errs[0], sinks.ErrNotConnected) || !strings.Contains(errs[0].Error(), "FRAME_ERROR") {
		t.Fatalf("big header: got %v, want the broker's FRAME_ERROR, not a connection failure", errs[0])
	}
	if !errors.Is(errs[1], sinks.ErrNotConnected) {
		t.Fatalf("the message behind it: got %v, want a connection failure (no attempt)", errs[1])
	}
}
