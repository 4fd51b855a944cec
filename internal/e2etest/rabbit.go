package e2etest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/sinks"
)

// Delivery is one message a consumer received.
type Delivery struct {
	Body    []byte
	ID      string // message id (AMQP MessageId, Kafka x-delaybridge-id)
	Due     int64  // x-delaybridge-due, Unix ms
	Attempt int64  // x-delaybridge-attempt
	Key     string // Kafka record key, AMQP routing key
	// Headers are the Kafka record's headers or the AMQP headers, values
	// printed with fmt.Sprint.
	Headers map[string]string
	// At is the earliest time known that the broker had the message: the
	// consumer's receive time (AMQP) or the record's timestamp, set by the
	// producer when it wrote it (Kafka). A message is early when At is
	// before its due time.
	At time.Time
}

// Rabbit is a durable direct exchange and a queue bound to it under the same
// name, with a consumer that records every delivery.
type Rabbit struct {
	Exchange, Queue string

	conn      *amqp.Connection
	args      amqp.Table
	transient bool

	mu  sync.Mutex
	got []Delivery
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

func newRabbit(tb testing.TB, r *Rabbit) *Rabbit {
	tb.Helper()
	name := r.Exchange
	conn, err := amqp.Dial(AMQPURL())
	if err != nil {
		tb.Fatalf("rabbitmq at %s is required: %v", AMQPURL(), err)
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
			d.Headers = make(map[string]string, len(m.Headers))
			for k, v := range m.Headers {
				d.Headers[k] = fmt.Sprint(v)
			}
			r.mu.Lock()
			r.got = append(r.got, d)
			r.mu.Unlock()
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

// Deliveries is a copy of what was received so far.
func (r *Rabbit) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.got...)
}

// Received is how many deliveries arrived so far.
func (r *Rabbit) Received() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}
