package amqp

import (
	"context"
	"errors"
	"fmt"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/sinks"
)

var (
	_ sinks.Checker      = (*Sink)(nil)
	_ sinks.QueueDepther = (*Sink)(nil)
)

// CheckDestination (sinks.Checker) reports whether the destination exists,
// by a passive declare on a short-lived channel of its own: a failed passive
// declare closes its channel, and the publishing channel must not go with
// it. The destination is Config.Exchange; on the default exchange ("",
// which always exists) it is the queue Config.RoutingKey names, since that
// exchange routes a message to the queue of that name or nowhere (nothing to
// check when messages bring their own keys). A named exchange's bindings
// are not checked: only a publish shows whether a key is routed (see
// PublishTest). Errors: sinks.ErrNoDestination (404), sinks.ErrAuth (403),
// sinks.ErrNotConnected while the sink is not connected or the broker does
// not answer before ctx ends.
func (s *Sink) CheckDestination(ctx context.Context) error {
	what := s.destination()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("check %s: %w", what, err)
	}
	sess, err := s.session()
	if err != nil {
		return err
	}
	if s.cfg.Exchange != "" || s.cfg.RoutingKey != "" {
		// The library's RPC takes no context; it ends with the connection
		// (heartbeats) at worst, so the goroutine is bounded even when ctx
		// ends first.
		res := make(chan error, 1)
		go func() { res <- s.declarePassive(sess.conn, what) }()
		select {
		case err = <-res:
		case <-ctx.Done():
			// No answer is not an answer: a stalled broker cannot be asked now.
			return sinks.NotConnected(fmt.Errorf("check %s on %s: no answer: %w", what, s.endpoint, ctx.Err()))
		}
		if err != nil {
			return err
		}
	}
	if s.cfg.HoldQueue == "" {
		return nil
	}
	_, err = s.QueueDepth(ctx)
	return err
}

// destination names what CheckDestination declares: the exchange, or on
// the default exchange the queue of the routing key.
func (s *Sink) destination() string {
	if s.cfg.Exchange == "" {
		return fmt.Sprintf("queue %q (default exchange, routing key)", s.cfg.RoutingKey)
	}
	return fmt.Sprintf("exchange %q", s.cfg.Exchange)
}

// declarePassive passively declares the destination (what) on a channel it
// opens and closes.
func (s *Sink) declarePassive(conn *amqp091.Connection, what string) error {
	ch, err := conn.Channel()
	if err != nil {
		return sinks.NotConnected(fmt.Errorf("open channel on %s to check %s: %w", s.endpoint, what, err))
	}
	defer func() { _ = ch.Close() }() // already closed after a refusal: nothing to do
	// The kind and flags are not compared by a passive declare.
	if s.cfg.Exchange == "" {
		_, err = ch.QueueDeclarePassive(s.cfg.RoutingKey, true, false, false, false, nil)
	} else {
		err = ch.ExchangeDeclarePassive(s.cfg.Exchange, amqp091.ExchangeDirect, true, false, false, false, nil)
	}
	if err == nil {
		return nil
	}
	var aerr *amqp091.Error
	switch {
	case errors.As(err, &aerr) && aerr.Code == amqp091.NotFound:
		return sinks.NoDestination(fmt.Errorf("%s does not exist in vhost %q on %s: %w", what, s.vhost(), s.endpoint, err))
	case errors.As(err, &aerr) && aerr.Code == amqp091.AccessRefused:
		return sinks.AuthFailed(fmt.Errorf("%s in vhost %q on %s: %w", what, s.vhost(), s.endpoint, err))
	case errors.As(err, &aerr) && aerr.Recover:
		return fmt.Errorf("check %s on %s: %w", what, s.endpoint, err)
	}
	return sinks.NotConnected(fmt.Errorf("check %s on %s: %w", what, s.endpoint, err))
}

func (s *Sink) vhost() string {
	uri, err := amqp091.ParseURI(s.cfg.URL)
	if err != nil {
		return "?"
	}
	return uri.Vhost
}

// refusedLogin marks a failed dial that the broker refused for its
// credentials (403 ACCESS_REFUSED) or the vhost (530 NOT_ALLOWED, or 403 on
// older brokers) with sinks.ErrAuth: no reconnect fixes it, so `check` can
// stop at once.
func refusedLogin(err error) error {
	var aerr *amqp091.Error
	if errors.As(err, &aerr) && (aerr.Code == amqp091.AccessRefused || aerr.Code == amqp091.NotAllowed) {
		return sinks.AuthFailed(err)
	}
	return err
}
