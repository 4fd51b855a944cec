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
//
// Where things are:
//   - sink.go: the Sink, New, Ping, WaitConnected and Close.
//   - confirms.go: the publisher-confirm path, in the order a message takes
//     it: Publish and Start write a batch on the channel and register each
//     message with the channel's tracker by delivery tag, waiting for
//     confirms while the channel's window of unconfirmed messages is full
//     (Config.MaxUnconfirmed); the channel's
//     watcher reads the broker's returns and acks or nacks (deferred
//     confirms) and resolves each message's result in its batch.
//   - tracker.go: the channel's tracker: the unconfirmed messages by
//     delivery tag, their window, and how a return, a confirm or the
//     channel's end settles them.
//   - blame.go: how the messages still waiting fail when their channel or
//     connection ends, or the sink closes.
//   - destination.go: CheckDestination, whether the exchange exists.
//   - depth.go: QueueDepth, the hold queue's ready messages.
//   - frame.go: the negotiated frame size, and the refusal of a message whose
//     header frame would not fit (RabbitMQ would close the connection).
//   - connection.go: connecting, opening the confirm-mode channel and
//     reconnecting with back-off.
//   - writeconn.go: write deadlines and corking under the connection.
//   - message.go: the AMQP message of a sinks.Message; config.go: Config.
package amqp

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/delaybridge/delaybridge/internal/logrepeat"
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
	// repeats logs the channel closes the broker makes over a message
	// once per interval with a count (Close writes the last count).
	repeats *logrepeat.Log

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the connection goroutine ended
	once   sync.Once

	// pubMu keeps the messages of one Publish call contiguous on the
	// channel; confirms are awaited after it is released.
	pubMu sync.Mutex

	mu        sync.Mutex
	sess      *session      // nil while disconnected
	up        chan struct{} // closed while sess is set
	down      error         // why sess is nil
	blocked   string        // the broker's reason while it blocks publishing
	blockedAt time.Time     // when the block began
	closed    bool

	// skipFrameCheck publishes a message whose headers exceed the frame
	// (tests: to see how the broker's close over it is blamed).
	skipFrameCheck bool
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
	log = log.With("sink", "amqp", "exchange", cfg.Exchange)
	s := &Sink{
		cfg:      cfg,
		log:      log,
		repeats:  logrepeat.New(log, 0),
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

// Ping reports whether the connection and its channel are open: nil when they
// are, an error wrapping sinks.ErrNotConnected that says why not otherwise
// (and sinks.ErrAuth too when the broker refused the credentials or the
// vhost at the last attempt).
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
	s.repeats.Flush(time.Now(), true)
	return nil
}
