package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/delaybridge/delaybridge/sinks"
)

// TestMissingTopicIsReportedUntilCreated: a topic nobody created fails
// CheckDestination and Publish with ErrNoDestination, naming the topic, and
// passes once created.
func TestMissingTopicIsReportedUntilCreated(t *testing.T) {
	t.Parallel()
	c := newCluster(t, uniqueTopic(t), 1)
	missing := uniqueTopic(t)
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: missing})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	err := s.CheckDestination(ctx)
	if !errors.Is(err, sinks.ErrNoDestination) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("check of a missing topic: %v, want ErrNoDestination naming %s", err, missing)
	}
	if err := publish(t, s, messages("missing", 1)); !errors.Is(err, sinks.ErrNoDestination) {
		t.Errorf("publish to a missing topic: %v, want ErrNoDestination", err)
	}

	createTopic(t, addr(c), missing)
	for {
		err := s.CheckDestination(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("check after the topic was created: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := publish(t, s, messages("created", 1)); err != nil {
		t.Errorf("publish after the topic was created: %v", err)
	}
}

// TestRefusedSASLIsAnAuthError: a broker's SASL_AUTHENTICATION_FAILED
// answer marks Ping's and CheckDestination's error with ErrAuth, so `check`
// can stop at once. (kfake closes the connection instead of answering, which
// is indistinguishable from a dropped connection: hence no cluster here.)
func TestRefusedSASLIsAnAuthError(t *testing.T) {
	t.Parallel()
	s := newSink(t, Config{Brokers: []string{"127.0.0.1:1"}, Topic: "t"})
	for _, tc := range []struct {
		err          error
		auth, notCon bool
	}{
		{fmt.Errorf("sasl: %w", kafkago.SASLAuthenticationFailed), true, true},
		{kafkago.UnsupportedSASLMechanism, true, true},
		{io.ErrUnexpectedEOF, false, true},
	} {
		got := s.unreachable("ping", tc.err)
		if errors.Is(got, sinks.ErrAuth) != tc.auth || errors.Is(got, sinks.ErrNotConnected) != tc.notCon {
			t.Errorf("unreachable(%v) = %v: want auth %v, not connected %v", tc.err, got, tc.auth, tc.notCon)
		}
	}
	if got := classify("t", kafkago.SASLAuthenticationFailed); !errors.Is(got, sinks.ErrAuth) || !errors.Is(got, sinks.ErrNotConnected) {
		t.Errorf("classify of a SASL refusal: %v, want ErrAuth and ErrNotConnected", got)
	}
}
