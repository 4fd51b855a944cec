package main

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// routingKey binds every benchmark queue to its exchange.
const routingKey = "bench"

// rabbitTarget is a direct exchange with one durable classic queue bound to
// it, both named name: what the daemon publishes to and the consumer reads.
type rabbitTarget struct{ name string }

func (e *env) declare(name string) (rabbitTarget, error) {
	ch, err := e.amqp.Channel()
	if err != nil {
		return rabbitTarget{}, fmt.Errorf("channel: %w", err)
	}
	defer ch.Close()
	if err := ch.ExchangeDeclare(name, "direct", true, false, false, false, nil); err != nil {
		return rabbitTarget{}, fmt.Errorf("declare exchange %s: %w", name, err)
	}
	if _, err := ch.QueueDeclare(name, true, false, false, false, amqp091.Table{"x-queue-type": "classic"}); err != nil {
		return rabbitTarget{}, fmt.Errorf("declare queue %s: %w", name, err)
	}
	if err := ch.QueueBind(name, routingKey, name, false, nil); err != nil {
		return rabbitTarget{}, fmt.Errorf("bind queue %s: %w", name, err)
	}
	return rabbitTarget{name: name}, nil
}

// space is a scenario's key prefix and the exchange and queue of the same
// name (declare); drop deletes them and the scenario's keys.
func (e *env) space(scenario string) (prefix string, target rabbitTarget, drop func(), err error) {
	prefix = e.prefix(scenario)
	if target, err = e.declare(prefix); err != nil {
		e.dropKeys(prefix)
		return "", rabbitTarget{}, nil, err
	}
	return prefix, target, func() {
		e.undeclare(target)
		e.dropKeys(prefix)
	}, nil
}

func (e *env) undeclare(t rabbitTarget) {
	ch, err := e.amqp.Channel()
	if err != nil {
		return
	}
	defer ch.Close()
	ch.QueueDelete(t.name, false, false, false)
	ch.ExchangeDelete(t.name, false, false)
}

// consume reads the queue of t on its own connection (auto-ack) and records
// every delivery in tr until stop is called.
func (e *env) consume(t rabbitTarget, tr *tracker) (stop func(), err error) {
	return e.consumeWith(t, func(d amqp091.Delivery, at int64) { tr.got(d.Body, at) })
}

// consumeWith reads the queue of t on its own connection (auto-ack) and
// hands every delivery to got with its receipt time (Unix ns), on one
// goroutine, until stop is called.
func (e *env) consumeWith(t rabbitTarget, got func(d amqp091.Delivery, at int64)) (stop func(), err error) {
	conn, err := amqp091.Dial(e.o.amqpURL)
	if err != nil {
		return nil, fmt.Errorf("consumer connection: %w", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("consumer channel: %w", err)
	}
	deliveries, err := ch.Consume(t.name, "", true, false, false, false, nil)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("consume %s: %w", t.name, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for d := range deliveries {
			got(d, time.Now().UnixNano())
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			conn.Close() // closes deliveries
			<-done
		})
	}, nil
}

// rawChannel is a connection of the raw publisher's own and a channel on it
// in confirm mode; closing the connection closes both.
func (e *env) rawChannel() (*amqp091.Connection, *amqp091.Channel, error) {
	conn, err := amqp091.Dial(e.o.amqpURL)
	if err != nil {
		return nil, nil, fmt.Errorf("raw publisher connection: %w", err)
	}
	ch, err := conn.Channel()
	if err == nil {
		err = ch.Confirm(false)
	}
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("raw publisher channel in confirm mode: %w", err)
	}
	return conn, ch, nil
}

// rawPublish measures RabbitMQ's own ceiling: n messages of the benchmark's
// size and properties published to t on one confirm-mode channel with up to
// -raw-window unconfirmed, while the consumer behind tr reads them. It returns
// messages per second from the first publish to the later of the last
// confirm and the last receipt.
func (e *env) rawPublish(ctx context.Context, t rabbitTarget, n, size int, tr *tracker) (float64, error) {
	conn, ch, err := e.rawChannel()
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	confirms := ch.NotifyPublish(make(chan amqp091.Confirmation, e.o.rawWindow+1))
	window := make(chan struct{}, e.o.rawWindow)
	confirmed := make(chan time.Time, 1)
	var nacks int
	go func() {
		got := 0
		for c := range confirms {
			if !c.Ack {
				nacks++
			}
			<-window
			if got++; got == n {
				confirmed <- time.Now()
				return
			}
		}
		close(confirmed)
	}()
	bodies := make([][]byte, n)
	now := time.Now()
	for i := range bodies {
		bodies[i] = body(i, now.UnixMilli(), size)
	}
	start := time.Now()
	for i, b := range bodies {
		select {
		case window <- struct{}{}:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		m := sinks.Message{ID: queue.MessageID(b), Topic: "bench", Body: b, Due: now, Attempt: 1}
		if err := ch.PublishWithContext(ctx, t.name, routingKey, true, false, publishingLike(m, time.Now())); err != nil {
			return 0, fmt.Errorf("raw publish %d: %w", i, err)
		}
	}
	var last time.Time
	select {
	case c, ok := <-confirmed:
		if !ok {
			return 0, fmt.Errorf("raw publisher: channel closed before every confirm")
		}
		last = c
	case <-time.After(2 * time.Minute):
		return 0, fmt.Errorf("raw publisher: confirms missing after 2 min")
	}
	if nacks > 0 {
		return 0, fmt.Errorf("raw publisher: %d nacks", nacks)
	}
	if !tr.wait(time.Now().Add(time.Minute), 10*time.Second) {
		return 0, fmt.Errorf("raw publisher: consumer got %d of %d", tr.unique.Load(), n)
	}
	last = maxTime(last, time.Unix(0, tr.last.Load()))
	return perSecond(float64(n), last.Sub(start)), nil
}

// publishingLike is the message as delaybridge's AMQP sink publishes it:
// persistent, message id, timestamp and the four x-delaybridge headers.
func publishingLike(m sinks.Message, now time.Time) amqp091.Publishing {
	return amqp091.Publishing{
		Headers: amqp091.Table{
			sinks.HeaderID:      m.ID,
			sinks.HeaderTopic:   m.Topic,
			sinks.HeaderDue:     m.DueMillis(),
			sinks.HeaderAttempt: int64(m.Attempt),
		},
		DeliveryMode: amqp091.Persistent,
		MessageId:    m.ID,
		Timestamp:    now,
		Body:         m.Body,
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// rawSteady publishes n messages straight to t, each at its due time (rate
// per second from a moment just ahead), with the consumer attached: what a
// forwarder costing nothing would achieve on this machine. It returns the
// consumer's lateness, the floor under the daemon's.
func (e *env) rawSteady(ctx context.Context, t rabbitTarget, n, rate int) (Lateness, error) {
	tr := newTracker(n)
	stop, err := e.consume(t, tr)
	if err != nil {
		return Lateness{}, err
	}
	defer stop()
	conn, ch, err := e.rawChannel()
	if err != nil {
		return Lateness{}, err
	}
	defer conn.Close()
	confirms := ch.NotifyPublish(make(chan amqp091.Confirmation, 1024))
	go func() {
		for range confirms {
		}
	}()
	t0 := time.Now().Add(200 * time.Millisecond).Truncate(time.Millisecond)
	dueOf := func(i int) time.Time {
		return t0.Add(time.Duration(i) * time.Second / time.Duration(rate)).Truncate(time.Millisecond)
	}
	for i := 0; i < n; {
		if d := time.Until(dueOf(i)); d > 0 {
			time.Sleep(d)
		}
		now := time.Now()
		for ; i < n && !dueOf(i).After(now); i++ {
			due := dueOf(i)
			b := body(i, due.UnixMilli(), e.o.size)
			m := sinks.Message{ID: queue.MessageID(b), Topic: "bench", Body: b, Due: due, Attempt: 1}
			if err := ch.PublishWithContext(ctx, t.name, routingKey, true, false, publishingLike(m, now)); err != nil {
				return Lateness{}, fmt.Errorf("raw publish %d: %w", i, err)
			}
		}
	}
	if !tr.wait(time.Now().Add(time.Minute), 10*time.Second) {
		return Lateness{}, fmt.Errorf("raw steady: consumer got %d of %d", tr.unique.Load(), n)
	}
	stop()
	return latenessOf(tr.outcome().lateMs), nil
}
