package amqp

import (
	"context"
	"fmt"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/sinks"
)

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
// Start does wait for confirms when the channel's window is full (see
// Config.MaxUnconfirmed): the broker then has what was written, and Start
// goes on once it confirmed a quarter of the window. ctx bounds the writing
// and that wait (the messages not yet written then fail with ctx's error);
// the caller bounds its wait for done.
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
		} else if n := len(m.RoutingKey); n > maxRoutingKey {
			// A Kafka record key can be longer than an AMQP routing key.
			b.resolve(i, sinks.Permanent(fmt.Errorf("routing key of %d bytes exceeds AMQP's %d", n, maxRoutingKey)))
		}
	}
	s.send(ctx, b, msgs)
	return b.done, b.result
}

// maxRoutingKey is the longest AMQP routing key (a short string).
const maxRoutingKey = 255

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
		pub := publishing(m, now, headers)
		size := headerFrameSize(pub)
		if err := fitsFrame(pub, sess.frameMax); err != nil && !s.skipFrameCheck {
			b.resolve(i, sinks.Permanent(err))
			continue
		}
		p := s.pending(slab, b, msgs, i)
		p.size = size
		tag := sess.ch.GetNextPublishSeqNo()
		room, ok := sess.tr.add(tag, p)
		for ok && room != nil {
			if err := s.waitRoom(ctx, sess, room); err != nil {
				b.resolveFrom(i, err)
				return
			}
			room, ok = sess.tr.add(tag, p)
		}
		if !ok {
			s.parkRest(sess, slab, b, msgs, i)
			return
		}
		if err := sess.ch.Publish(p.id.exchange, p.id.key, true, false, pub); err != nil {
			// Only a closing channel or connection refuses a publish: the
			// watcher settles these with the close's reason. p keeps its
			// size (parkRest builds the rest without one): a write cut
			// by the broker's close over this message's frame leaves it
			// the largest, the one blamed, not the messages behind it.
			if sess.tr.remove(tag) { // unless the close already settled it
				sess.tr.park(p)
			}
			s.parkRest(sess, slab, b, msgs, i+1)
			return
		}
	}
}

// waitRoom waits, with what was written so far sent to the broker, until
// the channel's window has room again (room closes: confirms came, the
// channel ended, or the broker blocked publishing). A non-nil result fails
// the messages not yet published: ctx ended, or the broker blocks (the
// published ones are confirmed once it lifts; the rest is claimed again
// then, as a Start during a block would be). A channel that ended is left to
// the next add, which parks the rest for its tracker's blame.
func (s *Sink) waitRoom(ctx context.Context, sess *session, room <-chan struct{}) error {
	// A block that began before room was handed out woke nobody: no
	// confirm frees the window until it lifts.
	if reason := s.blockedBy(); reason != "" {
		return &sinks.BlockedError{Reason: reason}
	}
	sess.w.uncork()
	defer sess.w.cork()
	select {
	case <-room:
	case <-ctx.Done():
		return fmt.Errorf("publish: wait for confirms to free the window: %w", ctx.Err())
	}
	if reason := s.blockedBy(); reason != "" {
		return &sinks.BlockedError{Reason: reason}
	}
	return nil
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

// batch collects the results of one Publish call.
type batch struct {
	mu       sync.Mutex
	errs     []error
	resolved []bool
	left     int
	done     chan struct{} // closed when every message has a result
}

func newBatch(n int) *batch {
	return &batch{errs: make([]error, n), resolved: make([]bool, n), left: n, done: make(chan struct{})}
}

// resolve records the result of message i; only the first result counts.
func (b *batch) resolve(i int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.resolved[i] {
		return
	}
	b.resolved[i], b.errs[i] = true, err
	b.left--
	if b.left == 0 {
		close(b.done)
	}
}

// resolveFrom fails message i and every later one that has no result yet.
func (b *batch) resolveFrom(i int, err error) {
	for ; i < len(b.errs); i++ {
		b.resolve(i, err)
	}
}

func (b *batch) isResolved(i int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.resolved[i]
}

// result is nil when every message was confirmed, the shared error when all
// failed for one reason, and a *sinks.BatchError otherwise.
func (b *batch) result() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var failed bool
	shared := b.errs[0]
	for _, err := range b.errs {
		if err != nil {
			failed = true
		}
		if err != shared { //nolint:errorlint // identity: the very same error value
			shared = nil
		}
	}
	switch {
	case !failed:
		return nil
	case shared != nil:
		return shared
	default:
		return &sinks.BatchError{Errs: append([]error(nil), b.errs...)}
	}
}

// listeners are the notifications of one channel, read by one goroutine.
type listeners struct {
	closes   chan *amqp091.Error
	returns  chan amqp091.Return // unbuffered: a return is taken before its ack
	confirms chan amqp091.Confirmation
}

// watch settles the messages of sess from its returns and confirms until its
// channel ends, then fails what is left (channelEnded, in blame.go). It
// reports whether the connection is still usable for another channel.
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
			if b.Active {
				sess.tr.wake()
			}
		case <-s.ctx.Done():
			s.shutdown(sess, l)
			return false
		}
	}
	return s.channelEnded(sess, l, closeErr)
}
