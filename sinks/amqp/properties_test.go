package amqp

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/sinks"
)

func TestDeliveryCarriesEnvelopeProperties(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	c := d.consume(t)
	s := newSink(t, testURL(), d, 0)
	p := sinks.Properties{
		ContentType: "application/json", ContentEncoding: "utf-8", CorrelationID: "corr", ReplyTo: "replies",
		Expiration: "600000", Timestamp: 1_700_000_000, Type: "order.created", AppID: "shop", Priority: 4,
	}
	m := sinks.Message{ID: "orig-id", Topic: "orders", Body: []byte(`{"a":1}`), Due: time.Now(), Attempt: 1,
		Headers: map[string]string{"content-type": "text/plain"}, Properties: p}
	if err := publish(t, s, []sinks.Message{m}); err != nil {
		t.Fatalf("publish: %v", err)
	}
	dl := c.next(t, 1, 30*time.Second)[0]
	got := sinks.Properties{
		ContentType: dl.ContentType, ContentEncoding: dl.ContentEncoding, CorrelationID: dl.CorrelationId,
		ReplyTo: dl.ReplyTo, Expiration: dl.Expiration, Timestamp: dl.Timestamp.Unix(), Type: dl.Type,
		AppID: dl.AppId, Priority: dl.Priority,
	}
	if got != p {
		t.Errorf("properties %+v, want %+v", got, p)
	}
	if dl.MessageId != m.ID || dl.Headers[sinks.HeaderID] != m.ID {
		t.Errorf("MessageId %q, %s %v, want %q", dl.MessageId, sinks.HeaderID, dl.Headers[sinks.HeaderID], m.ID)
	}
}

// A key longer than an AMQP routing key (a Kafka record key may be) fails
// that message permanently, before anything is sent; the others go.
func TestRoutingKeyLongerThanAMQPAllowsFailsPermanently(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	c := d.consume(t)
	s := newSink(t, testURL(), d, 0)
	long := sinks.Message{ID: "long", Topic: "orders", Body: []byte("x"), Due: time.Now(), Attempt: 1, RoutingKey: strings.Repeat("k", 256)}
	ok := sinks.Message{ID: "ok", Topic: "orders", Body: []byte("y"), Due: time.Now(), Attempt: 1}
	errs := sinks.Results(publish(t, s, []sinks.Message{long, ok}), 2)
	if !errors.Is(errs[0], sinks.ErrPermanent) || errs[1] != nil {
		t.Fatalf("results %v, want a permanent failure for the 256-byte key and nil", errs)
	}
	if dl := c.next(t, 1, 30*time.Second)[0]; dl.MessageId != "ok" {
		t.Errorf("delivered %q, want ok", dl.MessageId)
	}
}
