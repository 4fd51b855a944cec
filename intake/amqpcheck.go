package intake

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// ErrNoQueue says the queue an intake consumes does not exist: the intake
// declares nothing, so it would never consume.
var ErrNoQueue = errors.New("intake queue does not exist")

// CheckAMQPQueue connects once and asks whether cfg.Queue exists (a
// passive declare), for `delaybridge check`: a misspelt queue name
// otherwise shows only once the daemon runs. An error wraps ErrNoQueue when
// the broker answered that the queue is missing.
func CheckAMQPQueue(ctx context.Context, cfg AMQPConfig) error {
	a := &AMQP{cfg: cfg}
	conn, err := a.dial(ctx)
	if err != nil {
		return fmt.Errorf("connect for intake queue %q: %w", a.cfg.Queue, err)
	}
	defer func() { _ = conn.CloseDeadline(time.Now().Add(closeTimeout)) }()
	stop := context.AfterFunc(ctx, func() { _ = conn.CloseDeadline(time.Now().Add(closeTimeout)) })
	defer stop()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel for intake queue %q: %w", a.cfg.Queue, err)
	}
	if _, err := ch.QueueDeclarePassive(a.cfg.Queue, false, false, false, false, nil); err != nil {
		var ae *amqp091.Error
		if errors.As(err, &ae) && ae.Code == amqp091.NotFound {
			return fmt.Errorf("%w: %q (%s)", ErrNoQueue, a.cfg.Queue, ae.Reason)
		}
		return fmt.Errorf("check intake queue %q: %w", a.cfg.Queue, err)
	}
	return nil
}
