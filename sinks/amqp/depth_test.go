package amqp

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/sinks"
)

// TestQueueDepthCountsReadyMessagesAndAMissingHoldQueueIsNoDestination: a
// hold queue nobody declared is a checked-destination error naming it (the
// publishing channel survives the failed passive declares); once declared,
// QueueDepth counts the messages published into it.
func TestQueueDepthCountsReadyMessagesAndAMissingHoldQueueIsNoDestination(t *testing.T) {
	d := &dest{conn: adminConn(t), exchange: uniqueName(t), queue: uniqueName(t), key: "k"}
	s, err := New(Config{URL: testURL(), Exchange: d.exchange, RoutingKey: d.key, HoldQueue: d.queue}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	d.withoutQueue = true
	d.declare(t)
	err = s.CheckDestination(ctx)
	if !errors.Is(err, sinks.ErrNoDestination) || !strings.Contains(err.Error(), d.queue) {
		t.Fatalf("check with a missing hold queue: %v, want ErrNoDestination naming %s", err, d.queue)
	}
	if _, err := s.QueueDepth(ctx); !errors.Is(err, sinks.ErrNoDestination) {
		t.Fatalf("depth of a missing hold queue: %v, want ErrNoDestination", err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("ping after a failed depth read: %v (it must use a channel of its own)", err)
	}

	d.withoutQueue = false
	d.declare(t)
	if err := s.CheckDestination(ctx); err != nil {
		t.Fatalf("check after declaring the hold queue: %v", err)
	}
	msgs := make([]sinks.Message, 7)
	for i := range msgs {
		msgs[i] = sinks.Message{ID: "m", Topic: "t", Body: []byte("x"), Due: time.Now(), Attempt: 1}
	}
	if err := s.Publish(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	n, err := s.QueueDepth(ctx)
	if err != nil || n != 7 {
		t.Errorf("depth after publishing 7 = %d, %v; want 7", n, err)
	}
}
