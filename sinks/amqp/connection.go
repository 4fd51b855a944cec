package amqp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
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
}

// listeners are the notifications of one channel, read by one goroutine.
type listeners struct {
	closes   chan *amqp091.Error
	returns  chan amqp091.Return // unbuffered: a return is taken before its ack
	confirms chan amqp091.Confirmation
}

// run connects, serves the connection until it drops, and reconnects with
// back-off until Close.
func (s *Sink) run() {
	defer close(s.done)
	retry := backoff{min: s.cfg.ReconnectMin, max: s.cfg.ReconnectMax}
	for s.ctx.Err() == nil {
		conn, w, err := s.dial()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			wait := retry.next()
			s.setDown(fmt.Errorf("connect to %s: %w", s.endpoint, err))
			s.log.Warn("amqp connect failed", "url", s.endpoint, "retry_in", wait, "err", err)
			s.sleep(wait)
			continue
		}
		s.log.Info("amqp connected", "url", s.endpoint)
		retry.reset()
		s.serve(conn, w, &retry)
		if s.ctx.Err() == nil {
			s.sleep(retry.next())
		}
	}
	s.setDown(errClosed)
}

// serve opens channels on conn, reopening one the broker closed, until conn
// drops or the sink closes.
func (s *Sink) serve(conn *amqp091.Connection, w *writeTimeoutConn, retry *backoff) {
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
			s.sleep(retry.next())
			continue
		}
		sess := &session{conn: conn, w: w, ch: ch, tr: newTracker()}
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

// watch settles the messages of sess from its returns and confirms until its
// channel ends, then fails what is left. It reports whether the connection
// is still usable for another channel.
func (s *Sink) watch(sess *session, l listeners, connCloses <-chan *amqp091.Error, blocks <-chan amqp091.Blocking) bool {
	var closeErr *amqp091.Error
loop:
	for {
		select {
		case ret, ok := <-l.returns:
			if !ok {
				break loop
			}
			sess.tr.returned(ret)
		case c, ok := <-l.confirms:
			if !ok {
				break loop
			}
			sess.tr.confirmed(c)
		case e, ok := <-l.closes:
			if ok {
				closeErr = e
			}
			break loop
		case e := <-connCloses:
			closeErr = e
			break loop
		case b := <-blocks:
			s.setBlocked(blockReason(b))
			s.log.Warn("amqp broker blocks publishing", "active", b.Active, "reason", b.Reason)
		case <-s.ctx.Done():
			s.shutdown(sess, l)
			return false
		}
	}

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
	sess.tr.fail(blameFor(closeErr, connClosed))
	s.log.Warn("amqp channel closed", "url", s.endpoint, "connection_closed", connClosed, "unconfirmed", pending, "err", why)
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
			w = &writeTimeoutConn{Conn: c, timeout: s.cfg.WriteTimeout}
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

// writeTimeoutConn bounds every write. The library writes without a
// deadline while holding the channel's lock, so a write stuck on a stalled
// network would keep the channel, and its shutdown, blocked forever.
//
// It also corks: the library flushes every message on its own, one system
// call each, so while a batch is published the writes are gathered and sent
// together (every corkLimit bytes, and when the batch is done). Nothing
// waits for an answer to a write made while corked. A failed write closes
// the connection, so the library, and the sink's watcher, see it drop.
type writeTimeoutConn struct {
	net.Conn
	timeout time.Duration

	mu     sync.Mutex
	corked bool
	buf    []byte
	err    error // the write that failed: every later one fails too
}

// corkLimit is the most bytes held back while corked.
const corkLimit = 64 << 10

func (c *writeTimeoutConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if !c.corked {
		return c.write(p)
	}
	c.buf = append(c.buf, p...)
	if len(c.buf) >= corkLimit {
		if err := c.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// cork holds writes back until uncork.
func (c *writeTimeoutConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork sends what was held back and lets writes through again.
func (c *writeTimeoutConn) uncork() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	if c.err == nil {
		c.flush()
	}
}

// flush sends the held-back bytes; mu is held.
func (c *writeTimeoutConn) flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.write(c.buf)
	c.buf = c.buf[:0]
	if cap(c.buf) > 4*corkLimit {
		c.buf = nil
	}
	return err
}

// write sends p with the write deadline; mu is held. A failure closes the
// connection: bytes held back may be lost, so it cannot go on.
func (c *writeTimeoutConn) write(p []byte) (int, error) {
	err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
	n := 0
	if err == nil {
		n, err = c.Conn.Write(p)
	}
	if err != nil {
		c.err = err
		c.Conn.Close()
	}
	return n, err
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

// backoff is exponential with jitter between min and max.
type backoff struct {
	min, max time.Duration
	cur      time.Duration
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	// ±20% so a fleet does not reconnect in lockstep.
	jitter := time.Duration(rand.Int64N(int64(b.cur)/5+1)) * 2
	return max(b.cur-b.cur/5+jitter, 0)
}

func (b *backoff) reset() { b.cur = 0 }
