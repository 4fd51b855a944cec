package amqp

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/sinks"
)

// channelEnded fails the messages of sess that are still pending once its
// channel ended (closeErr: why, when the broker said), and withdraws the
// session. It reports whether the connection is still usable for another
// channel.
func (s *Sink) channelEnded(sess *session, l listeners, closeErr *amqp091.Error) bool {
	if closeErr == nil {
		select {
		case e, ok := <-l.closes:
			if ok {
				closeErr = e
			}
		default:
		}
	}
	connClosed := sess.conn.IsClosed()
	why := errors.New("channel closed")
	if closeErr != nil {
		why = closeErr
	}
	s.setDown(fmt.Errorf("connection to %s: %w", s.endpoint, why))
	// Confirms that arrived before the close are real: settle them first.
	drain(l, sess.tr)
	pending := sess.tr.len()
	sess.tr.fail(blameFor(closeErr, connClosed, sess.tr.largest()))
	if connClosed {
		s.log.Warn("amqp channel closed", "url", s.endpoint, "connection_closed", connClosed, "unconfirmed", pending, "err", why)
	} else {
		// The broker closed the channel over a message (a missing
		// exchange: one 404 per publish): once per interval, counted.
		s.repeats.Add(slog.LevelWarn, "", "amqp channel closed by the broker", 1, why.Error())
	}
	return !connClosed
}

// shutdown ends sess at Close: pending messages fail with errClosed, then the
// connection closes while its last notifications are drained.
func (s *Sink) shutdown(sess *session, l listeners) {
	s.setDown(errClosed)
	sess.tr.fail(func(*pending) error { return errClosed })
	var wg sync.WaitGroup
	wg.Go(func() { _ = sess.conn.CloseDeadline(time.Now().Add(closeTimeout)) })
	drain(l, sess.tr)
	wg.Wait()
}

// drain takes the returns and confirms of a channel that is closing until
// the library closes both listeners.
func drain(l listeners, tr *tracker) {
	returns, confirms := l.returns, l.confirms
	for returns != nil || confirms != nil {
		select {
		case ret, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			tr.returned(ret)
		case c, ok := <-confirms:
			if !ok {
				confirms = nil
				continue
			}
			tr.confirmed(c)
		}
	}
}

// exchangeInReply finds the exchange a channel error names, as in
// "NOT_FOUND - no exchange 'x' in vhost '/'" or "ACCESS_REFUSED - access to
// exchange 'x' in vhost '/' refused for user 'u'".
var exchangeInReply = regexp.MustCompile(`exchange '([^']*)'`)

// blameFor says how the pending messages of a channel that ended with
// closeErr fail.
//
// A connection that is gone is not the messages' fault: they fail with
// sinks.ErrNotConnected and go back without using an attempt. When the broker
// closed only the channel with a soft error (404 no such exchange, 403, 406),
// that is its answer about the messages it names: the messages to the named
// exchange fail with the broker's text and count an attempt, while the
// others, discarded along with the channel, fail with ErrNotConnected. A soft
// error that names no exchange blames every pending message, so a message
// the broker keeps refusing is dead-lettered in the end instead of retried
// forever.
//
// A connection the broker closed over a frame it could not take (501
// FRAME_ERROR, 502 SYNTAX_ERROR, 505 UNEXPECTED_FRAME) was closed over a
// publish: the pending message with the largest content header (largest
// bytes) is the suspect and is charged an attempt, so a message that breaks
// the connection ends in the dead set instead of stalling its slot; the
// others go back without one.
func blameFor(closeErr *amqp091.Error, connClosed bool, largest int) func(*pending) error {
	// The library reports its own I/O failures (EOF, a reset) as 501 too:
	// only the broker's close (Server) speaks of a frame it refused.
	if closeErr != nil && connClosed && closeErr.Server && frameFault(closeErr.Code) {
		answer := fmt.Errorf("broker closed the connection over the message's frame (headers too large?): %w", closeErr)
		others := sinks.NotConnected(fmt.Errorf("connection lost before confirm: %w", closeErr))
		return func(p *pending) error {
			if p.size == largest {
				return answer
			}
			return others
		}
	}
	if closeErr == nil || connClosed || !closeErr.Recover {
		reason := error(errors.New("connection closed"))
		if closeErr != nil {
			reason = closeErr
		}
		err := sinks.NotConnected(fmt.Errorf("connection lost before confirm: %w", reason))
		return func(*pending) error { return err }
	}
	others := sinks.NotConnected(fmt.Errorf("channel closed before confirm: %w", closeErr))
	m := exchangeInReply.FindStringSubmatch(closeErr.Reason)
	if m == nil {
		answer := fmt.Errorf("broker closed the channel: %w", closeErr)
		return func(*pending) error { return answer }
	}
	answer := fmt.Errorf("broker refused publish to exchange %q: %w", m[1], closeErr)
	if closeErr.Code == amqp091.NotFound {
		answer = sinks.NoDestination(answer)
	}
	return func(p *pending) error {
		if p.id.exchange == m[1] {
			return answer
		}
		return others
	}
}

// frameFault reports whether a connection close code says a frame the
// client sent was malformed or too large.
func frameFault(code int) bool {
	return code == amqp091.FrameError || code == amqp091.SyntaxError || code == amqp091.UnexpectedFrame
}
