package amqp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/internal/backoff"
	"github.com/delaybridge/delaybridge/internal/rawio"
	"github.com/delaybridge/delaybridge/sinks"
)

const (
	dialTimeout      = 30 * time.Second // TCP connect
	handshakeTimeout = 30 * time.Second // TLS and AMQP handshake
	closeTimeout     = 5 * time.Second  // connection.close handshake at Close
	// confirmBuffer is the capacity of the confirm listener. The library
	// drops a confirm its listener does not take within 5s; the watcher
	// never blocks, and the buffer absorbs bursts while it is descheduled.
	confirmBuffer = 1 << 14
)

// session is one open connection and its confirm-mode channel.
type session struct {
	conn *amqp091.Connection
	w    *writeTimeoutConn // under conn: corks the writes of a batch
	ch   *amqp091.Channel
	tr   *tracker
	// frameMax is the frame_max negotiated with the broker (0: none).
	frameMax int
}

// reconnectJitter shortens each wait between connection attempts by up to
// a fifth at random, so a fleet that lost the broker together does not
// reconnect in lockstep.
const reconnectJitter = 0.2

// run connects, serves the connection until it drops, and reconnects with
// back-off until Close.
func (s *Sink) run() {
	defer close(s.done)
	retry := backoff.New(backoff.Policy{Min: s.cfg.ReconnectMin, Max: s.cfg.ReconnectMax, Jitter: reconnectJitter})
	var refusals connectLog
	for s.ctx.Err() == nil {
		conn, w, err := s.dial()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			wait := retry.Next()
			why := refusedLogin(fmt.Errorf("connect to %s: %w", s.endpoint, err))
			s.setDown(why)
			refusals.failed(s, why, err, wait)
			s.sleep(wait)
			continue
		}
		s.log.Info("amqp connected", "url", s.endpoint)
		retry.Reset()
		refusals = connectLog{}
		s.serve(conn, w, retry)
		if s.ctx.Err() == nil {
			s.sleep(retry.Next())
		}
	}
	s.setDown(errClosed)
}

// refusedLogEvery is how often a broker that keeps refusing the credentials
// is logged: a reconnect every few seconds must not flood the log.
const refusedLogEvery = time.Minute

// connectLog logs failed connects: an outage at WARN each time, refused
// credentials at ERROR once per refusedLogEvery with a count, since they
// are not an outage that passes by itself.
type connectLog struct {
	refused int
	logged  time.Time
}

func (l *connectLog) failed(s *Sink, why, err error, wait time.Duration) {
	if !errors.Is(why, sinks.ErrAuth) {
		s.log.Warn("amqp connect failed", "url", s.endpoint, "retry_in", wait, "err", err)
		return
	}
	l.refused++
	if time.Since(l.logged) >= refusedLogEvery {
		s.log.Error("amqp connect refused: broker refused the credentials or the vhost", "url", s.endpoint,
			"count", l.refused, "err", err)
		l.refused, l.logged = 0, time.Now()
	}
}

// serve opens channels on conn, reopening one the broker closed, until conn
// drops or the sink closes.
func (s *Sink) serve(conn *amqp091.Connection, w *writeTimeoutConn, retry *backoff.Backoff) {
	connCloses := conn.NotifyClose(make(chan *amqp091.Error, 1))
	blocks := conn.NotifyBlocked(make(chan amqp091.Blocking, 8))
	defer func() { _ = conn.CloseDeadline(time.Now().Add(closeTimeout)) }()
	for s.ctx.Err() == nil && !conn.IsClosed() {
		ch, l, err := openChannel(conn)
		if err != nil {
			s.setDown(fmt.Errorf("open channel on %s: %w", s.endpoint, err))
			s.log.Warn("amqp channel open failed", "url", s.endpoint, "err", err)
			if conn.IsClosed() {
				return
			}
			s.sleep(retry.Next())
			continue
		}
		sess := &session{conn: conn, w: w, ch: ch, tr: newTracker(s.cfg.MaxUnconfirmed), frameMax: conn.Config.FrameSize}
		s.setUp(sess)
		if !s.watch(sess, l, connCloses, blocks) {
			return
		}
	}
}

// openChannel opens a channel in confirm mode with its listeners registered
// before the first publish.
func openChannel(conn *amqp091.Connection) (*amqp091.Channel, listeners, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, listeners{}, err
	}
	l := listeners{
		closes:   ch.NotifyClose(make(chan *amqp091.Error, 1)),
		returns:  ch.NotifyReturn(make(chan amqp091.Return)),
		confirms: ch.NotifyPublish(make(chan amqp091.Confirmation, confirmBuffer)),
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, listeners{}, fmt.Errorf("confirm mode: %w", err)
	}
	return ch, l, nil
}

func blockReason(b amqp091.Blocking) string {
	if !b.Active {
		return ""
	}
	if b.Reason == "" {
		return "resource alarm"
	}
	return b.Reason
}

// dial opens a connection; Close interrupts the TCP connect and the
// handshake. It also returns the connection's writer.
func (s *Sink) dial() (*amqp091.Connection, *writeTimeoutConn, error) {
	props := amqp091.NewConnectionProperties()
	if s.cfg.Name != "" {
		props.SetClientConnectionName(s.cfg.Name)
	}
	var mu sync.Mutex
	var raw net.Conn
	var w *writeTimeoutConn
	cfg := amqp091.Config{
		TLSClientConfig: s.cfg.TLS,
		Properties:      props,
		Dial: func(network, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: dialTimeout}
			c, err := d.DialContext(s.ctx, network, addr)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			raw = c
			mu.Unlock()
			if err := s.ctx.Err(); err != nil {
				_ = c.Close()
				return nil, err
			}
			if err := c.SetDeadline(time.Now().Add(handshakeTimeout)); err != nil {
				_ = c.Close()
				return nil, err
			}
			mu.Lock()
			w = &writeTimeoutConn{Conn: rawio.Conn(c), timeout: s.cfg.WriteTimeout}
			mu.Unlock()
			return w, nil
		},
	}
	stop := context.AfterFunc(s.ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if raw != nil {
			_ = raw.SetDeadline(time.Now())
		}
	})
	defer stop()
	conn, err := amqp091.DialConfig(s.cfg.URL, cfg)
	if err != nil {
		return nil, nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	return conn, w, nil
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
		return nil, &sinks.BlockedError{Reason: s.blocked}
	}
	return s.sess, nil
}

// blockedBy is the broker's reason while it blocks publishing, or "".
func (s *Sink) blockedBy() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blocked
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

// setBlocked records a block ("": lifted) and logs its start and its end
// once each, whatever the number of topics and slots that wait on it.
func (s *Sink) setBlocked(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case reason != "" && s.blocked == "":
		s.blockedAt = time.Now()
		s.log.Warn("amqp broker blocks publishing: claiming nothing for its topics until it lifts; in-flight messages keep their leases",
			"url", s.endpoint, "reason", reason)
	case reason == "" && s.blocked != "":
		s.log.Warn("amqp broker lifted its block: claiming again", "url", s.endpoint, "reason", s.blocked,
			"blocked_for", time.Since(s.blockedAt).Round(time.Millisecond))
	}
	s.blocked = reason
}

// sleep waits d or until Close.
func (s *Sink) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.ctx.Done():
	}
}
