package amqp

import (
	"context"
	"errors"
	"fmt"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/sinks"
)

// QueueDepth is how many ready messages Config.HoldQueue holds, read with a
// passive queue declare (no management plugin needed) on a short-lived
// channel of its own, like CheckDestination: a failed passive declare closes
// its channel. Errors as CheckDestination's: sinks.ErrNoDestination when the
// queue does not exist, sinks.ErrAuth, sinks.ErrNotConnected while the sink
// is not connected or the broker does not answer before ctx ends.
func (s *Sink) QueueDepth(ctx context.Context) (int, error) {
	q := s.cfg.HoldQueue
	if q == "" {
		return 0, errors.New("queue depth: no hold queue configured")
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("read depth of queue %q: %w", q, err)
	}
	sess, err := s.session()
	if err != nil {
		return 0, err
	}
	type answer struct {
		n   int
		err error
	}
	res := make(chan answer, 1)
	go func() {
		n, err := s.declareQueuePassive(sess.conn, q)
		res <- answer{n, err}
	}()
	select {
	case a := <-res:
		return a.n, a.err
	case <-ctx.Done():
		return 0, sinks.NotConnected(fmt.Errorf("read depth of queue %q on %s: no answer: %w", q, s.endpoint, ctx.Err()))
	}
}

// declareQueuePassive passively declares queue q on a channel it opens and
// closes, and returns its ready count.
func (s *Sink) declareQueuePassive(conn *amqp091.Connection, q string) (int, error) {
	ch, err := conn.Channel()
	if err != nil {
		return 0, sinks.NotConnected(fmt.Errorf("open channel on %s to read queue %q: %w", s.endpoint, q, err))
	}
	defer func() { _ = ch.Close() }() // already closed after a refusal: nothing to do
	// A passive declare compares no flags: only the name counts.
	st, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
	if err == nil {
		return st.Messages, nil
	}
	var aerr *amqp091.Error
	switch {
	case errors.As(err, &aerr) && aerr.Code == amqp091.NotFound:
		return 0, sinks.NoDestination(fmt.Errorf("hold queue %q does not exist in vhost %q on %s: %w", q, s.vhost(), s.endpoint, err))
	case errors.As(err, &aerr) && aerr.Code == amqp091.AccessRefused:
		return 0, sinks.AuthFailed(fmt.Errorf("hold queue %q in vhost %q on %s: %w", q, s.vhost(), s.endpoint, err))
	case errors.As(err, &aerr) && aerr.Recover:
		return 0, fmt.Errorf("read queue %q on %s: %w", q, s.endpoint, err)
	}
	return 0, sinks.NotConnected(fmt.Errorf("read queue %q on %s: %w", q, s.endpoint, err))
}
