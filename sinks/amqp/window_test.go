package amqp

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/sinks"
)

// windowSink is a sink publishing to d through url with a window of w
// unconfirmed messages.
func windowSink(t *testing.T, url string, d *dest, w int) *Sink {
	t.Helper()
	return newSinkWith(t, url, d, func(c *Config) { c.MaxUnconfirmed = w })
}

// waitDone waits for done, failing t after 30s: nothing may hang.
func waitDone(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer within 30s", what)
	}
}

// waiting reports whether a publish waits for the window of s's channel.
func waiting(s *Sink) bool {
	sess, err := s.session()
	if err != nil {
		return false
	}
	sess.tr.mu.Lock()
	defer sess.tr.mu.Unlock()
	return sess.tr.room != nil
}

func TestPublishingFarBeyondTheWindowConfirmsEveryMessageInOrder(t *testing.T) {
	t.Parallel()
	const window = 50
	d := newDest(t, nil)
	s := windowSink(t, testURL(), d, window)
	c := d.consume(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	type started struct {
		done   <-chan struct{}
		result func() error
	}
	var all []started
	var want []string
	for b := range 8 {
		msgs := numbered(fmt.Sprintf("b%d", b), 250)
		for _, m := range msgs {
			want = append(want, string(m.Body))
		}
		done, result := s.Start(ctx, msgs)
		all = append(all, started{done, result})
	}
	for b, st := range all {
		waitDone(t, fmt.Sprintf("batch %d", b), st.done)
		if err := st.result(); err != nil {
			t.Errorf("batch %d: %v", b, err)
		}
	}
	got := c.next(t, len(want), 30*time.Second)
	for i, dl := range got {
		if string(dl.Body) != want[i] {
			t.Fatalf("delivery %d is %s, want %s (start order)", i, dl.Body, want[i])
		}
	}
	c.quiet(t, 200*time.Millisecond)
	sess, err := s.session()
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	sess.tr.mu.Lock()
	peak := sess.tr.peak
	sess.tr.mu.Unlock()
	if peak > window {
		t.Errorf("%d messages unconfirmed on the channel at once, want at most the window, %d", peak, window)
	}
	t.Logf("peak unconfirmed %d of a window of %d", peak, window)
}

func TestContextEndingWhileWaitingForTheWindowFailsTheRest(t *testing.T) {
	t.Parallel()
	const window, n = 10, 50
	p := newProxy(t)
	d := newDest(t, nil)
	s := windowSink(t, viaProxy(t, p.Addr()), d, window)

	p.Stall()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	done, result := s.Start(ctx, numbered("m", n))
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("Start returned %v after its context ended", took-300*time.Millisecond)
	}
	p.Restore()
	waitDone(t, "the started batch", done)
	for i, err := range sinks.Results(result(), n) {
		switch {
		case i < window && err != nil && !errors.Is(err, sinks.ErrNotConnected):
			t.Errorf("message %d, published: %v, want confirmed or ErrNotConnected", i, err)
		case i >= window && !errors.Is(err, context.DeadlineExceeded):
			t.Errorf("message %d, waiting for the window: %v, want the context's error", i, err)
		}
	}
	// The sink works on.
	waitConnected(t, s)
	if err := publish(t, s, numbered("after", 3*window)); err != nil {
		t.Fatalf("publish after the stall: %v", err)
	}
}

func TestConnectionLostWhileWaitingForTheWindowFailsTheRest(t *testing.T) {
	t.Parallel()
	const window, n = 10, 50
	p := newProxy(t)
	d := newDest(t, nil)
	s := windowSink(t, viaProxy(t, p.Addr()), d, window)

	p.Stall()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type answer struct {
		done   <-chan struct{}
		result func() error
	}
	started := make(chan answer, 1)
	go func() {
		done, result := s.Start(ctx, numbered("m", n))
		started <- answer{done, result}
	}()
	eventually(t, "the publish waits for the window", func() bool { return waiting(s) })
	p.Cut()
	var a answer
	select {
	case a = <-started:
	case <-time.After(30 * time.Second):
		t.Fatalf("Start still waiting for the window 30s after the connection was cut")
	}
	waitDone(t, "the started batch", a.done)
	for i, err := range sinks.Results(a.result(), n) {
		if !errors.Is(err, sinks.ErrNotConnected) {
			t.Errorf("message %d: %v, want ErrNotConnected", i, err)
		}
	}
}

func TestChannelClosedWhileWaitingForTheWindowIsTheBrokersAnswer(t *testing.T) {
	t.Parallel()
	const window, n = 10, 50
	d := newDest(t, nil)
	d.deleteExchange(t)
	s := windowSink(t, testURL(), d, window)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	done, result := s.Start(ctx, numbered("m", n))
	waitDone(t, "the batch to a missing exchange", done)
	for i, err := range sinks.Results(result(), n) {
		if !errors.Is(err, sinks.ErrNoDestination) {
			t.Errorf("message %d: %v, want ErrNoDestination", i, err)
		}
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the answer took %v", took)
	}
}

// TestBlockWhileWaitingForTheWindowFailsTheRest: a broker that blocks
// publishing stops reading, so no confirm frees the window until it lifts;
// the messages not yet published fail at once as a Start during the block
// would, instead of holding every other slot's publish behind them.
func TestBlockWhileWaitingForTheWindowFailsTheRest(t *testing.T) {
	s := &Sink{}
	sess := &session{w: &writeTimeoutConn{}, tr: newTracker(1)}
	sess.tr.add(1, &pending{b: newBatch(1)})
	room, _ := sess.tr.add(2, &pending{b: newBatch(1)})
	if room == nil {
		t.Fatalf("full window gave no room to wait on")
	}
	got := make(chan error, 1)
	go func() { got <- s.waitRoom(context.Background(), sess, room) }()
	s.mu.Lock()
	s.blocked = "low on memory" // what the watcher's setBlocked records
	s.mu.Unlock()
	sess.tr.wake()
	select {
	case err := <-got:
		var be *sinks.BlockedError
		if !errors.As(err, &be) || be.Reason != "low on memory" {
			t.Fatalf("wait for the window during a block: %v, want a BlockedError with the reason", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the block did not end the wait for the window")
	}
	// A window found full while the broker already blocks: nothing will
	// wake the wait, so it does not begin.
	room, _ = sess.tr.add(2, &pending{b: newBatch(1)})
	if err := s.waitRoom(context.Background(), sess, room); !errors.As(err, new(*sinks.BlockedError)) {
		t.Fatalf("wait for the window after a block began: %v, want a BlockedError", err)
	}
}
