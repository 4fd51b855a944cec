// Package amqp is delaybridge's RabbitMQ sink: it publishes due messages as
// persistent, mandatory messages on one connection and one channel in
// confirm mode, and reports a message as published only after the broker
// confirmed it.
//
// An unroutable message (basic.return) and a nacked one fail as the broker's
// answer about the message; a message whose connection dropped before its
// confirm fails with sinks.ErrNotConnected. The sink connects in the
// background and reconnects with exponential back-off until Close: while it
// is disconnected, Publish fails at once and Ping reports why.
package amqp

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/sinks"
)

// errClosed fails what is published after Close, or was pending at Close.
// It is a connection failure too: the message is not at fault.
var errClosed = sinks.NotConnected(sinks.ErrClosed)

// Sink publishes to one RabbitMQ exchange. It implements sinks.Sink,
// sinks.Pinger and sinks.Starter.
type Sink struct {
	cfg      Config
	log      *slog.Logger
	endpoint string // the URL without its password, for logs

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the connection goroutine ended
	once   sync.Once

	// pubMu keeps the messages of one Publish call contiguous on the
	// channel; confirms are awaited after it is released.
	pubMu sync.Mutex

	mu      sync.Mutex
	sess    *session      // nil while disconnected
	up      chan struct{} // closed while sess is set
	down    error         // why sess is nil
	blocked string        // the broker's reason while it blocks publishing
	closed  bool
}

var (
	_ sinks.Sink    = (*Sink)(nil)
	_ sinks.Pinger  = (*Sink)(nil)
	_ sinks.Starter = (*Sink)(nil)
)

// New returns a sink that connects to cfg.URL in the background: an
// unreachable broker is not an error here. log defaults to slog.Default().
func New(cfg Config, log *slog.Logger) (*Sink, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("amqp sink config: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sink{
		cfg:      cfg,
		log:      log.With("sink", "amqp", "exchange", cfg.Exchange),
		endpoint: redact(cfg.URL),
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		up:       make(chan struct{}),
		down:     fmt.Errorf("connecting to %s", redact(cfg.URL)),
	}
	go s.run()
	return s, nil
}

// Publish publishes msgs in order and waits for the broker's confirms; see
// sinks.Sink for what the result means. Publishing while disconnected fails
// at once with an error wrapping sinks.ErrNotConnected.
func (s *Sink) Publish(ctx context.Context, msgs []sinks.Message) error {
	done, result := s.Start(ctx, msgs)
	select {
	case <-done:
		return result()
	case <-ctx.Done():
		return fmt.Errorf("wait for broker confirms: %w", ctx.Err())
	}
}

// Start (sinks.Starter) publishes msgs in order like Publish but returns
// once they are written to the channel, without waiting for the broker's
// confirms: done closes when every message has its answer, and result then
// returns what Publish would have. The messages of one Start go out contiguously and
// after those of every Start that returned before, so a caller can publish
// batch k+1 while the broker still confirms batch k and keep the order.
// ctx bounds the writing; the caller bounds its wait for done.
func (s *Sink) Start(ctx context.Context, msgs []sinks.Message) (done <-chan struct{}, result func() error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return answered(errClosed)
	}
	if len(msgs) == 0 {
		return answered(nil)
	}
	if err := ctx.Err(); err != nil {
		return answered(fmt.Errorf("publish %d messages: %w", len(msgs), err))
	}
	b := newBatch(len(msgs))
	for i, m := range msgs {
		if size := int64(len(m.Body)); size > s.cfg.MaxMessageSize {
			b.resolve(i, sinks.Permanent(fmt.Errorf("message of %d bytes exceeds max %d", size, s.cfg.MaxMessageSize)))
		}
	}
	s.send(ctx, b, msgs)
	return b.done, b.result
}

// answered is a Start result known at once.
func answered(err error) (<-chan struct{}, func() error) {
	c := make(chan struct{})
	close(c)
	return c, func() error { return err }
}

// send publishes the messages of b that have no result yet, contiguously.
func (s *Sink) send(ctx context.Context, b *batch, msgs []sinks.Message) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	sess, err := s.session()
	if err != nil {
		b.resolveFrom(0, err)
		return
	}
	sess.w.cork()
	defer sess.w.uncork()
	now := time.Now()
	// One allocation for the batch's trackers, and one headers table for
	// all its messages: the library encodes a message's headers before
	// Publish returns.
	slab := make([]pending, len(msgs))
	headers := make(amqp091.Table, 8)
	for i, m := range msgs {
		if b.isResolved(i) {
			continue
		}
		if err := ctx.Err(); err != nil {
			b.resolveFrom(i, fmt.Errorf("publish: %w", err))
			return
		}
		p := s.pending(slab, b, msgs, i)
		tag := sess.ch.GetNextPublishSeqNo()
		if !sess.tr.add(tag, p) {
			s.parkRest(sess, slab, b, msgs, i)
			return
		}
		if err := sess.ch.Publish(p.id.exchange, p.id.key, true, false, publishing(m, now, headers)); err != nil {
			// Only a closing channel or connection refuses a publish: the
			// watcher settles these with the close's reason.
			sess.tr.remove(tag) // unless the close already settled it
			s.parkRest(sess, slab, b, msgs, i)
			return
		}
	}
}

// parkRest hands message i and the later unsettled ones of b to the closing
// channel's tracker.
func (s *Sink) parkRest(sess *session, slab []pending, b *batch, msgs []sinks.Message, i int) {
	var ps []*pending
	for ; i < len(msgs); i++ {
		if !b.isResolved(i) {
			ps = append(ps, s.pending(slab, b, msgs, i))
		}
	}
	sess.tr.park(ps...)
}

// pending is message i of b as the tracker follows it, in slab[i].
func (s *Sink) pending(slab []pending, b *batch, msgs []sinks.Message, i int) *pending {
	key := msgs[i].RoutingKey
	if key == "" {
		key = s.cfg.RoutingKey
	}
	slab[i] = pending{b: b, i: i, id: identity{msgs[i].ID, s.cfg.Exchange, key}}
	return &slab[i]
}

// session is the open session, or why there is none.
func (s *Sink) session() (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, errClosed
	case s.sess == nil:
		return nil, sinks.NotConnected(s.down)
	case s.blocked != "":
		return nil, sinks.NotConnected(fmt.Errorf("broker blocked publishing: %s", s.blocked))
	}
	return s.sess, nil
}

// Ping reports whether the connection and its channel are open: nil when they
// are, an error wrapping sinks.ErrNotConnected that says why not otherwise.
func (s *Sink) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	sess, err := s.session()
	if err != nil {
		return err
	}
	if sess.conn.IsClosed() || sess.ch.IsClosed() {
		return sinks.NotConnected(fmt.Errorf("connection to %s closing", s.endpoint))
	}
	return nil
}

// WaitConnected blocks until the sink is connected, ctx ends or the sink is
// closed.
func (s *Sink) WaitConnected(ctx context.Context) error {
	for {
		s.mu.Lock()
		closed, connected, up, down := s.closed, s.sess != nil, s.up, s.down
		s.mu.Unlock()
		switch {
		case closed:
			return errClosed
		case connected:
			return nil
		}
		select {
		case <-up:
		case <-s.done:
		case <-ctx.Done():
			return fmt.Errorf("wait for connection (%w): %w", down, ctx.Err())
		}
	}
}

// Close fails the messages still waiting for a confirm, closes the
// connection and waits for the sink's goroutines to end. Calling it again
// does nothing.
func (s *Sink) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.cancel()
	})
	<-s.done
	return nil
}

// setUp publishes a freshly opened session.
func (s *Sink) setUp(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess, s.down, s.blocked = sess, nil, ""
	close(s.up)
}

// setDown withdraws the session, so Publish fails at once with why.
func (s *Sink) setDown(why error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = why
	if s.sess != nil {
		s.sess = nil
		s.up = make(chan struct{})
	}
}

func (s *Sink) setBlocked(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocked = reason
}
