package amqp

import (
	"context"
	"errors"
	"fmt"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/sinks"
)

var _ sinks.Checker = (*Sink)(nil)

// CheckDestination (sinks.Checker) reports whether Config.Exchange exists,
// by a passive declare on a short-lived channel of its own: a failed passive
// declare closes its channel, and the publishing channel must not go with
// it. The default exchange ("") always exists. Errors: sinks.ErrNoDestination
// (404), sinks.ErrAuth (403), sinks.ErrNotConnected while the sink is not
// connected or the broker does not answer before ctx ends.
func (s *Sink) CheckDestination(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("check exchange %q: %w", s.cfg.Exchange, err)
	}
	sess, err := s.session()
	if err != nil {
		return err
	}
	if s.cfg.Exchange != "" {
		// The library's RPC takes no context; it ends with the connection
		// (heartbeats) at worst, so the goroutine is bounded even when ctx
		// ends first.
		res := make(chan error, 1)
		go func() { res <- s.declarePassive(sess.conn) }()
		select {
		case err = <-res:
		case <-ctx.Done():
			// No answer is not an answer: a stalled broker cannot be asked now.
			return sinks.NotConnected(fmt.Errorf("check exchange %q on %s: no answer: %w", s.cfg.Exchange, s.endpoint, ctx.Err()))
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

// declarePassive passively declares the exchange on a channel it opens and
// closes.
func (s *Sink) declarePassive(conn *amqp091.Connection) error {
	ch, err := conn.Channel()
	if err != nil {
		return sinks.NotConnected(fmt.Errorf("open channel on %s to check exchange %q: %w", s.endpoint, s.cfg.Exchange, err))
	}
	defer func() { _ = ch.Close() }() // already closed after a refusal: nothing to do
	// The kind and flags are not compared by a passive declare.
	err = ch.ExchangeDeclarePassive(s.cfg.Exchange, amqp091.ExchangeDirect, true, false, false, false, nil)
	if err == nil {
		return nil
	}
	var aerr *amqp091.Error
	switch {
	case errors.As(err, &aerr) && aerr.Code == amqp091.NotFound:
		return sinks.NoDestination(fmt.Errorf("exchange %q does not exist in vhost %q on %s: %w", s.cfg.Exchange, s.vhost(), s.endpoint, err))
	case errors.As(err, &aerr) && aerr.Code == amqp091.AccessRefused:
		return sinks.AuthFailed(fmt.Errorf("exchange %q in vhost %q on %s: %w", s.cfg.Exchange, s.vhost(), s.endpoint, err))
	case errors.As(err, &aerr) && aerr.Recover:
		return fmt.Errorf("check exchange %q on %s: %w", s.cfg.Exchange, s.endpoint, err)
	}
	return sinks.NotConnected(fmt.Errorf("check exchange %q on %s: %w", s.cfg.Exchange, s.endpoint, err))
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
