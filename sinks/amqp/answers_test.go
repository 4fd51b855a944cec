package amqp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/sinks"
	"github.com/delaybridge/delaybridge/sinks/sinktest"
)

// brokerAnswer fails t unless err is the broker's answer about a message:
// retryable, counted as an attempt, with want in its text.
func brokerAnswer(t *testing.T, i int, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("message %d confirmed, want a failure containing %q", i, want)
	case errors.Is(err, sinks.ErrNotConnected):
		t.Errorf("message %d: %v wraps ErrNotConnected; the broker answered about the message", i, err)
	case errors.Is(err, sinks.ErrPermanent):
		t.Errorf("message %d: %v is permanent; it may succeed later", i, err)
	case !strings.Contains(err.Error(), want):
		t.Errorf("message %d: %v, want it to contain %q", i, err, want)
	}
}

func batchErrs(t *testing.T, err error, n int) []error {
	t.Helper()
	var be *sinks.BatchError
	if !errors.As(err, &be) {
		t.Fatalf("publish: %v, want a *sinks.BatchError", err)
	}
	if len(be.Errs) != n {
		t.Fatalf("BatchError has %d entries for %d messages", len(be.Errs), n)
	}
	return be.Errs
}

func TestUnroutableBatchFailsEveryMessage(t *testing.T) {
	t.Parallel()
	name := uniqueName(t)
	d := &dest{conn: adminConn(t), exchange: name, queue: name, key: "rk", withoutQueue: true}
	d.declare(t)
	s := newSink(t, testURL(), d, 0)

	msgs := sinktest.Messages(5)
	for i, err := range batchErrs(t, publish(t, s, msgs), len(msgs)) {
		brokerAnswer(t, i, err, "unroutable: 312 NO_ROUTE")
	}
	// The channel survives a return: the sink is still connected.
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("ping after returns: %v", err)
	}
}

func TestUnroutableRoutingKeyFailsOnlyItsMessages(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	c := d.consume(t)
	s := newSink(t, testURL(), d, 0)

	msgs := sinktest.Messages(600)
	for i := range msgs {
		if i%3 == 1 {
			msgs[i].RoutingKey = "nowhere"
		}
	}
	msgs[4].ID = msgs[1].ID // same identity twice: each return marks one message
	msgs[6].RoutingKey = d.key
	msgs[8].ID = msgs[1].ID // same id, routable key: must not be blamed
	errs := batchErrs(t, publish(t, s, msgs), len(msgs))
	var delivered []sinks.Message
	for i, err := range errs {
		if msgs[i].RoutingKey == "nowhere" {
			brokerAnswer(t, i, err, "unroutable")
			continue
		}
		if err != nil {
			t.Errorf("routable message %d failed: %v", i, err)
		}
		delivered = append(delivered, msgs[i])
	}
	sinktest.CheckReceived(t, delivered, c.read(t, len(delivered), 30*time.Second))
	c.quiet(t, 500*time.Millisecond)
}

func TestQueueFullNacksTheOverflow(t *testing.T) {
	t.Parallel()
	d := newDest(t, amqp091.Table{"x-max-length": int32(1), "x-overflow": "reject-publish"})
	s := newSink(t, testURL(), d, 0)

	msgs := sinktest.Messages(3)
	errs := batchErrs(t, publish(t, s, msgs), len(msgs))
	if errs[0] != nil {
		t.Errorf("first message, which fits in the queue, failed: %v", errs[0])
	}
	for i := 1; i < len(msgs); i++ {
		brokerAnswer(t, i, errs[i], "nacked")
	}
}

func TestMissingExchangeIsTheBrokersAnswerAndTheSinkRecovers(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	c := d.consume(t)
	s := newSink(t, testURL(), d, 0)

	first := sinktest.Messages(2)
	if err := publish(t, s, first); err != nil {
		t.Fatalf("publish before the exchange is deleted: %v", err)
	}
	sinktest.CheckReceived(t, first, c.read(t, len(first), 30*time.Second))

	d.deleteExchange(t)
	msgs := sinktest.Messages(4)
	for i, err := range sinks.Results(publish(t, s, msgs), len(msgs)) {
		brokerAnswer(t, i, err, "NOT_FOUND")
	}

	// The broker closed the channel; the sink reopens it on its own.
	waitConnected(t, s)
	d.declare(t)
	again := sinktest.Messages(3)
	if err := publish(t, s, again); err != nil {
		t.Fatalf("publish after the exchange is back: %v", err)
	}
	sinktest.CheckReceived(t, again, c.read(t, len(again), 30*time.Second))
}

func TestNeverDeclaredExchangeFailsThenRecovers(t *testing.T) {
	t.Parallel()
	name := uniqueName(t)
	d := &dest{conn: adminConn(t), exchange: name, queue: name, key: "rk"}
	s := newSink(t, testURL(), d, 0)

	for range 3 { // the channel is reopened after every refusal
		msgs := sinktest.Messages(3)
		for i, err := range sinks.Results(publish(t, s, msgs), len(msgs)) {
			brokerAnswer(t, i, err, "no exchange '"+name+"'")
		}
		waitConnected(t, s)
	}
	d.declare(t)
	c := d.consume(t)
	msgs := sinktest.Messages(2)
	if err := publish(t, s, msgs); err != nil {
		t.Fatalf("publish once the exchange exists: %v", err)
	}
	sinktest.CheckReceived(t, msgs, c.read(t, len(msgs), 30*time.Second))
}

func TestDeliveryCarriesPropertiesAndTypedHeaders(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	c := d.consume(t)
	s := newSink(t, testURL(), d, 0)

	due := time.UnixMilli(1_900_000_000_123)
	msgs := []sinks.Message{
		{ID: "id-json", Topic: "orders", Body: []byte(`{"a":1}`), Due: due, Attempt: 3,
			Headers: map[string]string{"content-type": "application/json", "x-tenant": "acme"}},
		{ID: "id-raw", Topic: "orders", Body: []byte("raw"), Due: due, Attempt: 1},
	}
	before := time.Now().Add(-2 * time.Second)
	if err := publish(t, s, msgs); err != nil {
		t.Fatalf("publish: %v", err)
	}
	got := c.next(t, 2, 30*time.Second)
	for i, dl := range got {
		m := msgs[i]
		if dl.MessageId != m.ID {
			t.Errorf("delivery %d: MessageId %q, want %q", i, dl.MessageId, m.ID)
		}
		if dl.DeliveryMode != amqp091.Persistent {
			t.Errorf("delivery %d: DeliveryMode %d, want %d (persistent)", i, dl.DeliveryMode, amqp091.Persistent)
		}
		if dl.Timestamp.Before(before.Truncate(time.Second)) || dl.Timestamp.After(time.Now().Add(2*time.Second)) {
			t.Errorf("delivery %d: Timestamp %v, want the publish time", i, dl.Timestamp)
		}
		if dl.RoutingKey != d.key || dl.Exchange != d.exchange {
			t.Errorf("delivery %d: exchange %q key %q, want %q %q", i, dl.Exchange, dl.RoutingKey, d.exchange, d.key)
		}
		if v, ok := dl.Headers[sinks.HeaderDue].(int64); !ok || v != due.UnixMilli() {
			t.Errorf("delivery %d: %s = %#v, want int64 %d", i, sinks.HeaderDue, dl.Headers[sinks.HeaderDue], due.UnixMilli())
		}
		if v, ok := dl.Headers[sinks.HeaderAttempt].(int64); !ok || v != int64(m.Attempt) {
			t.Errorf("delivery %d: %s = %#v, want int64 %d", i, sinks.HeaderAttempt, dl.Headers[sinks.HeaderAttempt], m.Attempt)
		}
		if v, ok := dl.Headers[sinks.HeaderTopic].(string); !ok || v != m.Topic {
			t.Errorf("delivery %d: %s = %#v, want %q", i, sinks.HeaderTopic, dl.Headers[sinks.HeaderTopic], m.Topic)
		}
		if v, ok := dl.Headers[sinks.HeaderID].(string); !ok || v != m.ID {
			t.Errorf("delivery %d: %s = %#v, want %q", i, sinks.HeaderID, dl.Headers[sinks.HeaderID], m.ID)
		}
	}
	if got[0].ContentType != "application/json" || got[0].Headers["x-tenant"] != "acme" {
		t.Errorf("envelope headers: content type %q, x-tenant %#v", got[0].ContentType, got[0].Headers["x-tenant"])
	}
	if got[1].ContentType != "" {
		t.Errorf("raw message: content type %q, want none", got[1].ContentType)
	}
}

func TestEnvelopeCannotForgeDelaybridgeHeaders(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	c := d.consume(t)
	s := newSink(t, testURL(), d, 0)
	m := sinktest.Messages(1)[0]
	m.Headers = map[string]string{sinks.HeaderAttempt: "99", sinks.HeaderTopic: "forged", "x-kept": "yes"}
	if err := publish(t, s, []sinks.Message{m}); err != nil {
		t.Fatalf("publish: %v", err)
	}
	r := c.read(t, 1, 30*time.Second)[0]
	if r.Attempt != m.Attempt || r.Topic != m.Topic || r.Headers["x-kept"] != "yes" {
		t.Fatalf("received attempt %d topic %q x-kept %q, want %d %q %q", r.Attempt, r.Topic, r.Headers["x-kept"], m.Attempt, m.Topic, "yes")
	}
}
