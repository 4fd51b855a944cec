package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
)

// intakePrefetch is the prefetch of the daemon's AMQP intake and of the raw
// consumer it is compared with (the intake's default).
const intakePrefetch = 256

// intakeVars configure the daemon for one envelope topic "bench" under
// prefix that publishes to t and takes its messages from the queue in.
func intakeVars(prefix string, t rabbitTarget, slots int, in string) map[string]string {
	v := amqpVars(prefix, t, slots)
	v["DELAYBRIDGE_TOPIC_BENCH_FORMAT"] = "envelope"
	v["DELAYBRIDGE_TOPIC_BENCH_INTAKE"] = "amqp"
	v["DELAYBRIDGE_TOPIC_BENCH_INTAKE_QUEUE"] = in
	v["DELAYBRIDGE_TOPIC_BENCH_INTAKE_PREFETCH"] = strconv.Itoa(intakePrefetch)
	return v
}

// declareQueue declares a durable classic queue bound to nothing: producers
// reach it through the default exchange, as they would an intake queue.
func (e *env) declareQueue(name string) error {
	ch, err := e.amqp.Channel()
	if err != nil {
		return fmt.Errorf("channel: %w", err)
	}
	defer ch.Close()
	if _, err := ch.QueueDeclare(name, true, false, false, false, amqp091.Table{"x-queue-type": "classic"}); err != nil {
		return fmt.Errorf("declare queue %s: %w", name, err)
	}
	return nil
}

func (e *env) deleteQueue(name string) {
	if ch, err := e.amqp.Channel(); err == nil {
		ch.QueueDelete(name, false, false, false)
		ch.Close()
	}
}

// queueState is the ready messages and consumers of a queue.
func (e *env) queueState(name string) (amqp091.Queue, error) {
	ch, err := e.amqp.Channel()
	if err != nil {
		return amqp091.Queue{}, err
	}
	defer ch.Close()
	return ch.QueueDeclarePassive(name, true, false, false, false, amqp091.Table{"x-queue-type": "classic"})
}

// delayed is message seq as a producer of the delayed-message plugin sends
// it: persistent, an x-delay header, no message id. Its body says it is due
// at dueMs.
func delayed(seq int, dueMs, delayMs int64, size int) amqp091.Publishing {
	return amqp091.Publishing{
		Headers:      amqp091.Table{"x-delay": delayMs},
		DeliveryMode: amqp091.Persistent,
		Body:         body(seq, dueMs, size),
	}
}

// fillQueue publishes n delayed messages, due at once, to queue q on one
// confirm-mode channel (-raw-window unconfirmed) and returns when the broker
// confirmed them all.
func (e *env) fillQueue(ctx context.Context, q string, n int) (time.Duration, error) {
	conn, err := amqp091.Dial(e.o.amqpURL)
	if err != nil {
		return 0, fmt.Errorf("filler connection: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, fmt.Errorf("filler channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		return 0, fmt.Errorf("confirm mode: %w", err)
	}
	confirms := ch.NotifyPublish(make(chan amqp091.Confirmation, e.o.rawWindow+1))
	window := make(chan struct{}, e.o.rawWindow)
	done := make(chan error, 1)
	go func() {
		got, nacks := 0, 0
		for c := range confirms {
			if !c.Ack {
				nacks++
			}
			<-window
			if got++; got == n {
				if nacks > 0 {
					done <- fmt.Errorf("filler: %d nacks", nacks)
				}
				close(done)
				return
			}
		}
		done <- errors.New("filler: channel closed before every confirm")
	}()
	start := time.Now()
	for i := range n {
		select {
		case window <- struct{}{}:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		now := time.Now().UnixMilli()
		if err := ch.PublishWithContext(ctx, "", q, false, false, delayed(i, now, 0, e.o.size)); err != nil {
			return 0, fmt.Errorf("fill %s: %w", q, err)
		}
	}
	select {
	case err := <-done:
		return time.Since(start), err
	case <-time.After(2 * time.Minute):
		return 0, errors.New("filler: confirms missing after 2 min")
	}
}

// rawIntake measures the ceiling of an intake: n delayed messages in queue
// q, consumed with the intake's prefetch and acknowledged one by one as
// the intake does, with nothing done in between. It returns messages per
// second from the consume to the last ack, and the CPU each process used.
func (e *env) rawIntake(ctx context.Context, q string, n int) (float64, map[string]float64, error) {
	if _, err := e.fillQueue(ctx, q, n); err != nil {
		return 0, nil, err
	}
	conn, err := amqp091.Dial(e.o.amqpURL)
	if err != nil {
		return 0, nil, fmt.Errorf("raw consumer connection: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, nil, fmt.Errorf("raw consumer channel: %w", err)
	}
	if err := ch.Qos(intakePrefetch, 0, false); err != nil {
		return 0, nil, fmt.Errorf("prefetch: %w", err)
	}
	m := e.meterCPU()
	start := time.Now()
	deliveries, err := ch.Consume(q, "", false, false, false, false, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("consume %s: %w", q, err)
	}
	for got := 0; got < n; got++ {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return 0, nil, fmt.Errorf("raw consumer: deliveries ended after %d of %d", got, n)
			}
			if err := d.Ack(false); err != nil {
				return 0, nil, fmt.Errorf("raw consumer ack: %w", err)
			}
		case <-time.After(30 * time.Second):
			return 0, nil, fmt.Errorf("raw consumer: %d of %d after a 30 s silence", got, n)
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	}
	rate := perSecond(float64(n), time.Since(start))
	cpu := m.used()
	fmt.Fprintf(os.Stderr, "   raw consume+ack: %.0f msg/s (cpu s %s)\n", rate, cpuText(cpu))
	return rate, cpu, nil
}

// consumerAttached polls queue q until it has a consumer and sends when
// it first saw one (every 2 ms: the start of the intake's work).
func (e *env) consumerAttached(ctx context.Context, q string) <-chan time.Time {
	out := make(chan time.Time, 1)
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			if s, err := e.queueState(q); err == nil && s.Consumers > 0 {
				out <- time.Now()
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return out
}

// scheduledBy counts what t's scheduled sets hold every 10 ms until it
// reaches n (t is paused: nothing leaves them) and returns when it first
// saw it.
func (e *env) scheduledBy(ctx context.Context, t queue.Topic, n int, deadline time.Time) (time.Time, error) {
	for first := true; ; first = false {
		got, err := e.waiting(ctx, t)
		if err == nil && got >= int64(n) {
			if first {
				return time.Now(), errors.New("every message was scheduled before the first look")
			}
			return time.Now(), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("intake scheduled %d of %d (%v)", got, n, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waiting is how many messages t's scheduled sets hold (one pipelined
// ZCARD per slot).
func (e *env) waiting(ctx context.Context, t queue.Topic) (int64, error) {
	cmds := make([]*redis.IntCmd, t.Slots)
	_, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range t.Slots {
			cmds[i] = p.ZCard(ctx, t.Keys(i).Scheduled)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("count scheduled: %w", err)
	}
	var sum int64
	for _, c := range cmds {
		sum += c.Val()
	}
	return sum, nil
}
