package e2etest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/sinks"
)

// Rabbit is a durable direct exchange and a queue bound to it under the same
// name, with a consumer that records every delivery.
type Rabbit struct {
	Exchange, Queue string

	conn      *amqp.Connection
	url       string // "": AMQPURL()
	args      amqp.Table
	transient bool

	received
}

// NewRabbit declares exchange and queue name (queue arguments args, e.g.
// x-max-length) on the test RabbitMQ, bound with routing key name. Nothing is
// consumed until Consume. At cleanup both are deleted.
func NewRabbit(tb testing.TB, name string, args amqp.Table) *Rabbit {
	tb.Helper()
	return newRabbit(tb, &Rabbit{Exchange: name, Queue: name, args: args})
}

// NewTransientRabbit is NewRabbit with an exchange and a queue that are not
// durable, consumed with automatic acknowledgements: for a test that counts
// what arrives at a high rate, not what survives a broker restart, so the
// broker keeps up without a disk.
func NewTransientRabbit(tb testing.TB, name string) *Rabbit {
	tb.Helper()
	return newRabbit(tb, &Rabbit{Exchange: name, Queue: name, transient: true})
}

// NewRabbitAt is NewRabbit on the broker at url (a RabbitNode's).
func NewRabbitAt(tb testing.TB, url, name string, args amqp.Table) *Rabbit {
	tb.Helper()
	return newRabbit(tb, &Rabbit{Exchange: name, Queue: name, url: url, args: args})
}

func newRabbit(tb testing.TB, r *Rabbit) *Rabbit {
	tb.Helper()
	name := r.Exchange
	if r.url == "" {
		r.url = AMQPURL()
	}
	conn, err := amqp.Dial(r.url)
	if err != nil {
		tb.Fatalf("rabbitmq at %s is required: %v", r.url, err)
	}
	r.conn = conn
	tb.Cleanup(func() {
		_ = r.Do(func(ch *amqp.Channel) error {
			_, _ = ch.QueueDelete(name, false, false, false)
			return ch.ExchangeDelete(name, false, false)
		})
		_ = conn.Close()
	})
	if err := r.Declare(); err != nil {
		tb.Fatalf("declare %s: %v", name, err)
	}
	return r
}

// TopicVars configure the daemon for one raw topic of slots slots under
// prefix, delivered to r's exchange with r's queue name as routing key.
func (r *Rabbit) TopicVars(prefix, topic string, slots int) map[string]string {
	t := "DELAYBRIDGE_TOPIC_" + strings.ToUpper(topic) + "_"
	return map[string]string{
		"DELAYBRIDGE_KEY_PREFIX": prefix,
		"DELAYBRIDGE_TOPICS":     topic,
		t + "SLOTS":              strconv.Itoa(slots),
		t + "EXCHANGE":           r.Exchange,
		t + "ROUTING_KEY":        r.Queue,
	}
}

// Declare (re)declares the exchange and the queue and binds them: after
// the test deleted the exchange, it brings the route back.
func (r *Rabbit) Declare() error {
	return r.Do(func(ch *amqp.Channel) error {
		if err := ch.ExchangeDeclare(r.Exchange, "direct", !r.transient, false, false, false, nil); err != nil {
			return err
		}
		if _, err := ch.QueueDeclare(r.Queue, !r.transient, false, false, false, r.args); err != nil {
			return err
		}
		return ch.QueueBind(r.Queue, r.Queue, r.Exchange, false, nil)
	})
}

// Do runs fn on a channel of its own (deleting the exchange, unbinding the
// queue…): a failed operation closes only that channel.
func (r *Rabbit) Do(fn func(ch *amqp.Channel) error) error {
	ch, err := r.conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	return fn(ch)
}

// Consume starts consuming the queue, acknowledging every delivery after
// recording it (a transient queue's deliveries are acknowledged by the
// broker as it sends them). The consumer stops at cleanup.
func (r *Rabbit) Consume(tb testing.TB) {
	tb.Helper()
	ch, err := r.conn.Channel()
	if err != nil {
		tb.Fatalf("consumer channel: %v", err)
	}
	if err := ch.Qos(2000, 0, false); err != nil {
		tb.Fatalf("qos: %v", err)
	}
	msgs, err := ch.Consume(r.Queue, "", r.transient, false, false, false, nil)
	if err != nil {
		tb.Fatalf("consume %s: %v", r.Queue, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range msgs {
			d := Delivery{Body: m.Body, ID: m.MessageId, Key: m.RoutingKey, At: time.Now()}
			d.Due = toInt64(m.Headers[sinks.HeaderDue])
			d.Attempt = toInt64(m.Headers[sinks.HeaderAttempt])
			d.Headers = otherHeaders(m.Headers)
			r.add(d)
			if !r.transient {
				_ = m.Ack(false)
			}
		}
	}()
	tb.Cleanup(func() {
		_ = ch.Close()
		<-done
	})
}

// otherHeaders are the headers of a delivery that are not delaybridge's
// own, as text (nil when there are none, as for most scenarios' messages).
func otherHeaders(h amqp.Table) map[string]string {
	var out map[string]string
	for k, v := range h {
		if strings.HasPrefix(k, "x-delaybridge-") {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = fmt.Sprint(v)
	}
	return out
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int32:
		return int64(n)
	case int:
		return int64(n)
	}
	return 0
}
