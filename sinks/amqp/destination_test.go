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

// TestDefaultExchangeAlwaysExists: "" needs no declare.
func TestDefaultExchangeAlwaysExists(t *testing.T) {
	s, err := New(Config{URL: testURL(), RoutingKey: "q"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckDestination(ctx); err != nil {
		t.Errorf("check of the default exchange: %v", err)
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
