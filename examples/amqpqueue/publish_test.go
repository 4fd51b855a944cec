package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// TestPublishSendsAnXDelayMessageTheWayDocsMigrationSays: docs/migration.md
// publishes an x-delay test message with this command; the message arrives
// in the queue with the header as the delayed-message plugin's producers
// send it (an integer), persistent, and a publish no queue is bound for is
// an error instead of a message silently dropped.
func TestPublishSendsAnXDelayMessageTheWayDocsMigrationSays(t *testing.T) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	queue := "dbtest-amqpqueue-" + hex.EncodeToString(b)
	conn, err := amqp091.Dial(e2etest.AMQPURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(queue, false, false, false) })

	var out bytes.Buffer
	if err := publish(&out, e2etest.AMQPURL(), "", queue, []byte(`{"order":42}`), 5000); err != nil {
		t.Fatalf("publish: %v", err)
	}
	if !strings.Contains(out.String(), "with x-delay 5000") {
		t.Errorf("publish said %q", out.String())
	}
	var m amqp091.Delivery
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var ok bool
		if m, ok, err = ch.Get(queue, true); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the published message never reached the queue")
		}
	}
	if string(m.Body) != `{"order":42}` || m.Headers["x-delay"] != int64(5000) || m.DeliveryMode != amqp091.Persistent {
		t.Errorf("got body %q, headers %v, delivery mode %d; want the body, x-delay 5000 (int64), persistent", m.Body, m.Headers, m.DeliveryMode)
	}

	err = publish(&out, e2etest.AMQPURL(), "", queue+"-missing", []byte("x"), -1)
	if err == nil || !strings.Contains(err.Error(), "no queue is bound") {
		t.Errorf("publish to a queue that does not exist: %v, want an error saying no queue is bound for it", err)
	}
}
