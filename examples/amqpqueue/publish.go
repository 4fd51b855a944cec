package main

import (
	"context"
	"fmt"
	"io"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// publish sends body with routing key key to exchange ("" the default
// exchange), persistent and mandatory, with the header x-delay when delay
// is 0 or more, and waits for the broker's confirm. A message no queue is
// bound for comes back from the broker and is an error naming it.
func publish(w io.Writer, url, exchange, key string, body []byte, delay int64) error {
	conn, err := amqp091.Dial(url)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		return fmt.Errorf("confirm mode: %w", err)
	}
	returned := ch.NotifyReturn(make(chan amqp091.Return, 1))
	msg := amqp091.Publishing{DeliveryMode: amqp091.Persistent, ContentType: "application/octet-stream", Body: body}
	if delay >= 0 {
		msg.Headers = amqp091.Table{"x-delay": delay}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conf, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, msg)
	if err != nil {
		return fmt.Errorf("publish to %s: %w", target(exchange, key), err)
	}
	ok, err := conf.WaitContext(ctx)
	if err != nil || !ok {
		return fmt.Errorf("publish to %s: not confirmed (%v)", target(exchange, key), err)
	}
	select {
	case r := <-returned:
		return fmt.Errorf("publish to %s: returned %d %s: no queue is bound for it", target(exchange, key), r.ReplyCode, r.ReplyText)
	default:
	}
	if delay >= 0 {
		fmt.Fprintf(w, "published %d bytes to %s with x-delay %d\n", len(body), target(exchange, key), delay)
	} else {
		fmt.Fprintf(w, "published %d bytes to %s\n", len(body), target(exchange, key))
	}
	return nil
}

// target names where a publish goes, as a person reads it.
func target(exchange, key string) string {
	if exchange == "" {
		return fmt.Sprintf("queue %s (the default exchange)", key)
	}
	return fmt.Sprintf("exchange %s, routing key %q", exchange, key)
}
