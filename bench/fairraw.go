package main

import (
	"context"
	"fmt"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// rawUntil publishes message i of at most n straight to t at its due time
// dueOf(i), on a confirm-mode channel of its own (confirms not awaited),
// until ctx ends; it returns how many it published. It is fairness-raw's
// trickle: what a forwarder costing nothing would do beside the burst.
func (e *env) rawUntil(ctx context.Context, t rabbitTarget, n int, dueOf func(int) time.Time) (int, error) {
	conn, ch, err := e.rawChannel()
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	confirms := ch.NotifyPublish(make(chan amqp091.Confirmation, 1024))
	go func() {
		for range confirms {
		}
	}()
	i := 0
	for i < n {
		if !sleep(ctx, time.Until(dueOf(i))) {
			return i, ctx.Err()
		}
		now := time.Now()
		for ; i < n && !dueOf(i).After(now); i++ {
			due := dueOf(i)
			b := body(i, due.UnixMilli(), e.o.size)
			m := sinks.Message{ID: queue.MessageID(b), Topic: fairTrickle, Body: b, Due: due, Attempt: 1}
			if err := ch.PublishWithContext(context.WithoutCancel(ctx), t.name, routingKey, true, false, publishingLike(m, now)); err != nil {
				return i, fmt.Errorf("raw publish %d: %w", i, err)
			}
		}
	}
	return i, nil
}

// sleep waits d or until ctx ends: false when it ended.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
