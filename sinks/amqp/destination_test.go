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

// TestMissingExchangeIsReportedUntilDeclared: CheckDestination of an
// exchange nobody declared wraps ErrNoDestination and names it, a publish
// to it fails with ErrNoDestination too (not as a connection problem), and
// both pass once the exchange exists. The publishing channel survives the
// failed passive declares.
func TestMissingExchangeIsReportedUntilDeclared(t *testing.T) {
	d := &dest{conn: adminConn(t), exchange: uniqueName(t), queue: uniqueName(t), key: "k"}
	s, err := New(Config{URL: testURL(), Exchange: d.exchange, RoutingKey: d.key}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	err = s.CheckDestination(ctx)
	if !errors.Is(err, sinks.ErrNoDestination) || !strings.Contains(err.Error(), d.exchange) {
		t.Fatalf("check of a missing exchange: %v, want ErrNoDestination naming %s", err, d.exchange)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("ping after a failed check: %v (the check must use a channel of its own)", err)
	}
	err = s.Publish(ctx, []sinks.Message{{ID: "m1", Topic: "t", Body: []byte("x"), Due: time.Now(), Attempt: 1}})
	if !errors.Is(err, sinks.ErrNoDestination) || errors.Is(err, sinks.ErrNotConnected) {
		t.Errorf("publish to a missing exchange: %v, want ErrNoDestination, not a connection failure", err)
	}

	d.declare(t)
	if err := s.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckDestination(ctx); err != nil {
		t.Fatalf("check after declaring the exchange: %v", err)
	}
	if err := s.Publish(ctx, []sinks.Message{{ID: "m2", Topic: "t", Body: []byte("x"), Due: time.Now(), Attempt: 1}}); err != nil {
		t.Errorf("publish after declaring the exchange: %v", err)
	}
}

// TestDefaultExchangeChecksTheQueueOfTheRoutingKey: the default exchange
// routes to the queue its routing key names or nowhere, so that queue is
// the destination: missing, the check wraps ErrNoDestination and names it
// (the quick start's queue deleted: `check` said ok and the next message
// died 312 NO_ROUTE); declared, it passes. With no routing key (messages
// bring their own) there is nothing to check.
func TestDefaultExchangeChecksTheQueueOfTheRoutingKey(t *testing.T) {
	queue := uniqueName(t)
	conn := adminConn(t)
	s, err := New(Config{URL: testURL(), RoutingKey: queue}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	err = s.CheckDestination(ctx)
	if !errors.Is(err, sinks.ErrNoDestination) || !strings.Contains(err.Error(), `queue "`+queue+`"`) {
		t.Fatalf("check of the default exchange without the queue: %v, want ErrNoDestination naming queue %s", err, queue)
	}
	ch := channel(t, conn)
	defer func() { _ = ch.Close() }()
	if _, err := ch.QueueDeclare(queue, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = ch.QueueDelete(queue, false, false, false) }()
	if err := s.CheckDestination(ctx); err != nil {
		t.Errorf("check of the default exchange with the queue declared: %v", err)
	}
	own, err := New(Config{URL: testURL()}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if err := own.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := own.CheckDestination(ctx); err != nil {
		t.Errorf("check of the default exchange without a routing key: %v", err)
	}
}

// TestWrongPasswordIsAnAuthError: Ping says the credentials were refused
// within moments, so `check` need not wait for its timeout.
func TestWrongPasswordIsAnAuthError(t *testing.T) {
	bad := strings.Replace(testURL(), ":guest@", ":wrong-password@", 1)
	if bad == testURL() {
		t.Skip("DELAYBRIDGE_TEST_AMQP_URL has no guest password to spoil")
	}
	s, err := New(Config{URL: bad}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := s.Ping(context.Background())
		if errors.Is(err, sinks.ErrAuth) {
			if strings.Contains(err.Error(), "wrong-password") {
				t.Errorf("the error shows the password: %v", err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ping with a wrong password: %v, want ErrAuth within 5s", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
