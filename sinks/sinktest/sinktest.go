// Package sinktest is the conformance suite every sinks.Sink must pass. A
// broker adapter's tests call Run with a Harness that creates a sink and reads
// back what reached the broker; the suite itself knows no broker.
package sinktest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delaybridge/delaybridge/sinks"
)

// Received is a delivered message as a consumer sees it.
type Received struct {
	Body    []byte
	ID      string
	Topic   string
	Due     int64
	Attempt int
	// Headers holds every header as text, including the x-delaybridge-* ones.
	Headers map[string]string
	// RoutingKey is the AMQP routing key, or the Kafka record key as text.
	RoutingKey string
}

// Harness adapts one broker to the suite.
type Harness struct {
	// New returns a fresh sink, connected and ready to publish, that publishes
	// to a fresh destination (its own exchange and queue, or topic) which
	// keeps the order of publication (one queue, one partition), and a
	// function that reads exactly n messages from that destination within
	// timeout, failing the test otherwise. New registers the cleanup of
	// everything it creates; the suite closes the sink itself too, so Close
	// must be idempotent.
	New func(t *testing.T, o Options) (sinks.Sink, func(t *testing.T, n int, timeout time.Duration) []Received)
	// WantKey is the key message m arrives with (Received.RoutingKey) from a
	// sink made with Options.Keys: for AMQP the routing key it was published
	// with, for Kafka its record key as text ("" for none). It states the
	// sink's documented contract; the suite checks the sink keeps it.
	WantKey func(m sinks.Message) string
}

// Options is what a case asks of the sink and destination Harness.New makes.
type Options struct {
	// MaxMessageSize is the sink's size limit: larger bodies must fail with
	// sinks.ErrPermanent.
	MaxMessageSize int
	// Keys, when not empty, are every per-message key (sinks.Message
	// RoutingKey) the case publishes with. The sink must honour them
	// (Kafka: key mode envelope) and the destination must receive the
	// messages carrying any of them as well as those carrying none (AMQP:
	// bind the queue with each key besides the sink's routing key).
	Keys []string
}

const (
	// readTimeout is generous: the machine running the suite may be loaded.
	readTimeout = 30 * time.Second
	// publishTimeout bounds one Publish call of the suite.
	publishTimeout = 30 * time.Second
	maxSize        = 64 << 10
)

// Run runs the conformance suite against the sinks h creates.
func Run(t *testing.T, h Harness) {
	t.Run("BatchArrivesInOrderIntact", func(t *testing.T) { t.Parallel(); testBatchArrivesInOrderIntact(t, h) })
	t.Run("EmptyBatchIsNoOp", func(t *testing.T) { t.Parallel(); testEmptyBatchIsNoOp(t, h) })
	t.Run("OversizedMessageFailsPermanentlyAlone", func(t *testing.T) { t.Parallel(); testOversizedFailsAlone(t, h) })
	t.Run("PublishAfterCloseReturnsErrClosed", func(t *testing.T) { t.Parallel(); testPublishAfterClose(t, h) })
	t.Run("CloseTwiceIsFine", func(t *testing.T) { t.Parallel(); testCloseTwice(t, h) })
	t.Run("CancelledContextReturnsPromptly", func(t *testing.T) { t.Parallel(); testCancelledContext(t, h) })
	t.Run("ConcurrentPublishesDeliverEverything", func(t *testing.T) { t.Parallel(); testConcurrentPublishes(t, h) })
	t.Run("PerMessageRoutingKeyIsHonoured", func(t *testing.T) { t.Parallel(); testPerMessageKeys(t, h) })
}

func newSink(t *testing.T, h Harness, o Options) (sinks.Sink, func(t *testing.T, n int, timeout time.Duration) []Received) {
	t.Helper()
	s, read := h.New(t, o)
	t.Cleanup(func() { _ = s.Close() })
	return s, read
}

// Messages makes n distinct messages whose ids start with a random prefix,
// with every field the suite checks set to a value that differs by index.
func Messages(n int) []sinks.Message {
	prefix := randomHex(6)
	due := time.UnixMilli(1_764_000_000_000)
	msgs := make([]sinks.Message, n)
	for i := range msgs {
		msgs[i] = sinks.Message{
			ID:      fmt.Sprintf("%s-%04d", prefix, i),
			Topic:   "sinktest-" + strconv.Itoa(i%3),
			Body:    fmt.Appendf(nil, `{"n":%d,"p":"%s"}`, i, prefix),
			Due:     due.Add(time.Duration(i) * time.Millisecond),
			Attempt: i%4 + 1,
			Headers: map[string]string{"x-app-trace": prefix + strconv.Itoa(i), "x-app-kind": "sinktest"},
		}
	}
	return msgs
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func publish(t *testing.T, s sinks.Sink, msgs []sinks.Message) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	return s.Publish(ctx, msgs)
}

// CheckReceived fails t unless got is want, in order, with every field intact.
func CheckReceived(t *testing.T, want []sinks.Message, got []Received) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("received %d messages, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.ID {
			t.Fatalf("message %d: id %q, want %q (order or content lost)", i, g.ID, w.ID)
		}
		if !bytes.Equal(g.Body, w.Body) {
			t.Errorf("message %d: body %q, want %q", i, g.Body, w.Body)
		}
		if g.Topic != w.Topic {
			t.Errorf("message %d: topic %q, want %q", i, g.Topic, w.Topic)
		}
		if g.Due != w.DueMillis() {
			t.Errorf("message %d: due %d, want %d", i, g.Due, w.DueMillis())
		}
		if g.Attempt != w.Attempt {
			t.Errorf("message %d: attempt %d, want %d", i, g.Attempt, w.Attempt)
		}
		for k, v := range w.Headers {
			if g.Headers[k] != v {
				t.Errorf("message %d: header %q = %q, want %q", i, k, g.Headers[k], v)
			}
		}
		for k, v := range map[string]string{
			sinks.HeaderTopic:   w.Topic,
			sinks.HeaderDue:     w.DueHeader(),
			sinks.HeaderAttempt: strconv.Itoa(w.Attempt),
		} {
			if g.Headers[k] != v {
				t.Errorf("message %d: header %q = %q, want %q", i, k, g.Headers[k], v)
			}
		}
	}
}

func testBatchArrivesInOrderIntact(t *testing.T, h Harness) {
	s, read := newSink(t, h, Options{MaxMessageSize: maxSize})
	msgs := Messages(50)
	if err := publish(t, s, msgs); err != nil {
		t.Fatalf("publish: %v", err)
	}
	CheckReceived(t, msgs, read(t, len(msgs), readTimeout))
}

func testEmptyBatchIsNoOp(t *testing.T, h Harness) {
	s, read := newSink(t, h, Options{MaxMessageSize: maxSize})
	if err := publish(t, s, nil); err != nil {
		t.Fatalf("publish nil batch: %v", err)
	}
	if err := publish(t, s, []sinks.Message{}); err != nil {
		t.Fatalf("publish empty batch: %v", err)
	}
	// The destination keeps order: if the empty batches had published
	// anything, it would come before this marker.
	marker := Messages(1)
	if err := publish(t, s, marker); err != nil {
		t.Fatalf("publish marker: %v", err)
	}
	CheckReceived(t, marker, read(t, 1, readTimeout))
}

func testOversizedFailsAlone(t *testing.T, h Harness) {
	const limit = 1024
	s, read := newSink(t, h, Options{MaxMessageSize: limit})
	msgs := Messages(4)
	msgs[2].Body = bytes.Repeat([]byte("x"), limit+1)
	msgs[3].Body = bytes.Repeat([]byte("y"), limit) // exactly at the limit is allowed

	err := publish(t, s, msgs)
	var be *sinks.BatchError
	if !errors.As(err, &be) {
		t.Fatalf("publish with one oversized message: %v, want a *sinks.BatchError", err)
	}
	if len(be.Errs) != len(msgs) {
		t.Fatalf("BatchError has %d entries for %d messages", len(be.Errs), len(msgs))
	}
	for i, e := range be.Errs {
		switch {
		case i == 2 && !errors.Is(e, sinks.ErrPermanent):
			t.Errorf("oversized message: %v, want an error wrapping sinks.ErrPermanent", e)
		case i != 2 && e != nil:
			t.Errorf("message %d failed: %v", i, e)
		}
	}
	CheckReceived(t, []sinks.Message{msgs[0], msgs[1], msgs[3]}, read(t, 3, readTimeout))
}

func testPublishAfterClose(t *testing.T, h Harness) {
	s, _ := newSink(t, h, Options{MaxMessageSize: maxSize})
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := publish(t, s, Messages(2)); !errors.Is(err, sinks.ErrClosed) {
		t.Fatalf("publish after close: %v, want an error wrapping sinks.ErrClosed", err)
	}
}

func testCloseTwice(t *testing.T, h Harness) {
	s, _ := newSink(t, h, Options{MaxMessageSize: maxSize})
	if err := publish(t, s, Messages(3)); err != nil {
		t.Fatalf("publish: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("first close: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("second close: %v", err)
		}
	case <-time.After(publishTimeout):
		t.Fatalf("second close did not return within %v", publishTimeout)
	}
}

func testCancelledContext(t *testing.T, h Harness) {
	s, _ := newSink(t, h, Options{MaxMessageSize: maxSize})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	err := s.Publish(ctx, Messages(10))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("publish with a cancelled context: %v, want an error wrapping context.Canceled", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("publish with a cancelled context took %v", took)
	}
}

func testConcurrentPublishes(t *testing.T, h Harness) {
	s, read := newSink(t, h, Options{MaxMessageSize: maxSize})
	const workers, batches, perBatch = 6, 5, 8
	all := make([][]sinks.Message, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers*batches)
	for w := range workers {
		all[w] = Messages(batches * perBatch)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				if err := publish(t, s, all[w][b*perBatch:(b+1)*perBatch]); err != nil {
					errs <- fmt.Errorf("worker %d batch %d: %w", w, b, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent publish: %v", err)
	}
	if t.Failed() {
		return
	}

	got := read(t, workers*batches*perBatch, readTimeout)
	byID := make(map[string]Received, len(got))
	for _, r := range got {
		if _, dup := byID[r.ID]; dup {
			t.Errorf("message %s delivered twice", r.ID)
		}
		byID[r.ID] = r
	}
	for w, msgs := range all {
		// Each worker published sequentially: its messages keep their order.
		var mine []Received
		for _, r := range got {
			if hasID(msgs, r.ID) {
				mine = append(mine, r)
			}
		}
		if len(mine) != len(msgs) {
			t.Errorf("worker %d: %d of %d messages delivered", w, len(mine), len(msgs))
			continue
		}
		CheckReceived(t, msgs, mine)
	}
}

func testPerMessageKeys(t *testing.T, h Harness) {
	if h.WantKey == nil {
		t.Fatal("the harness has no WantKey: it must say which key a message arrives with")
	}
	routingKeys := []string{"orders.eu", "orders.us"}
	s, read := newSink(t, h, Options{MaxMessageSize: maxSize, Keys: routingKeys})

	// Keys and no key, interleaved so that a sink that keeps the key of
	// one message for the next, or of the batch's first for all, fails.
	msgs := Messages(16)
	for i := range msgs {
		n := i / 4 % 2
		switch i % 4 {
		case 1:
			msgs[i].RoutingKey = routingKeys[n]
		case 3:
			msgs[i].RoutingKey = routingKeys[1-n]
		}
	}
	want := make([]string, len(msgs))
	for i, m := range msgs {
		want[i] = h.WantKey(m)
	}
	if !slices.ContainsFunc(want, func(k string) bool { return k != want[0] }) {
		t.Fatalf("WantKey gives every message the key %q: the case would prove nothing", want[0])
	}

	if err := publish(t, s, msgs); err != nil {
		t.Fatalf("publish: %v", err)
	}
	got := read(t, len(msgs), readTimeout)
	CheckReceived(t, msgs, got)
	gotKeys := make([]string, len(got))
	for i, r := range got {
		gotKeys[i] = r.RoutingKey
	}
	if diff := cmp.Diff(want, gotKeys); diff != "" {
		t.Errorf("keys the messages arrived with (-want +got):\n%s", diff)
	}
}

func hasID(msgs []sinks.Message, id string) bool {
	for _, m := range msgs {
		if m.ID == id {
			return true
		}
	}
	return false
}
