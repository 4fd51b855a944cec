package amqp

import (
	"context"
	"errors"
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
		p := s.pending(slab, b, msgs, i)
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
		if err := sess.ch.Publish(p.id.exchange, p.id.key, true, false, publishing(m, now, headers)); err != nil {
			// Only a closing channel or connection refuses a publish: the
			// watcher settles these with the close's reason.
			sess.tr.remove(tag) // unless the close already settled it
			s.parkRest(sess, slab, b, msgs, i)
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

// pending is one published message waiting for its confirm.
type pending struct {
	b        *batch
	i        int
	id       identity
	returned error // set by basic.return, reported when the ack arrives
}

// identity is what a basic.return tells about the message it returns.
type identity struct{ messageID, exchange, key string }

// tracker follows the unconfirmed messages of one channel by delivery tag.
//
// RabbitMQ sends basic.return before the basic.ack of an unroutable
// mandatory message, and that ack is still an ack. The channel's watcher
// reads returns (unbuffered, so the library cannot hand over the later ack
// first) and confirms on one goroutine: a return marks the earliest pending
// message with its identity, and the ack then reports the failure. Returns
// are rare, so a return searches the pending messages rather than every
// publish keeping an index by identity.
//
// It also bounds the channel's window: at most window messages published
// and unconfirmed (see Config.MaxUnconfirmed for why).
type tracker struct {
	mu     sync.Mutex
	tags   map[uint64]*pending
	low    uint64               // lowest tag whose confirm has not been seen
	unsent []*pending           // publish refused by the closing channel
	blame  func(*pending) error // set when the channel ended
	window int                  // most messages in tags
	// room, while a publisher waits for the window, closes once a quarter
	// of it is free (so a full window is refilled in chunks, not one
	// message per confirm), when the channel ends, or at wake.
	room chan struct{}
	peak int // the most messages tags held (tests)
}

func newTracker(window int) *tracker {
	return &tracker{tags: make(map[uint64]*pending), low: 1, window: window}
}

// add registers tag before its message is published. ok false: the channel
// is gone, do not publish. room non-nil: the window is full, publish nothing
// until room closes, then add again.
func (t *tracker) add(tag uint64, p *pending) (room <-chan struct{}, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.blame != nil {
		return nil, false
	}
	if len(t.tags) >= t.window {
		if t.room == nil {
			t.room = make(chan struct{})
		}
		return t.room, true
	}
	t.tags[tag] = p
	t.peak = max(t.peak, len(t.tags))
	return nil, true
}

// freed wakes a publisher waiting for the window once a quarter of it is
// free; mu is held.
func (t *tracker) freed() {
	if t.room != nil && len(t.tags) <= t.window-max(t.window/4, 1) {
		t.wakeLocked()
	}
}

// wake wakes a publisher waiting for the window whatever its room: the
// broker blocked publishing, so it must look why.
func (t *tracker) wake() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.wakeLocked()
}

func (t *tracker) wakeLocked() {
	if t.room != nil {
		close(t.room)
		t.room = nil
	}
}

// remove forgets tag after its publish failed; false when the tracker had
// already settled it.
func (t *tracker) remove(tag uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.take(tag) != nil
}

func (t *tracker) take(tag uint64) *pending {
	p, ok := t.tags[tag]
	if !ok {
		return nil
	}
	delete(t.tags, tag)
	return p
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

// returned marks the earliest unconfirmed, not yet returned message with the
// identity of ret as unroutable.
func (t *tracker) returned(ret amqp091.Return) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := identity{ret.MessageId, ret.Exchange, ret.RoutingKey}
	var first *pending
	var firstTag uint64
	for tag, p := range t.tags {
		if p.id == id && p.returned == nil && (first == nil || tag < firstTag) {
			first, firstTag = p, tag
		}
	}
	if first != nil {
		first.returned = fmt.Errorf("unroutable: %d %s: %w", ret.ReplyCode, ret.ReplyText, sinks.ErrNoDestination)
	}
}

// confirmed settles the message of c. The library hands confirms over in
// tag order, so a pending tag below c's lost its confirm (the library drops
// a notification its listener did not take within seconds): its fate is
// unknown and it fails as a connection problem, to be published again.
func (t *tracker) confirmed(c amqp091.Confirmation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for ; t.low < c.DeliveryTag; t.low++ {
		if p := t.take(t.low); p != nil {
			p.b.resolve(p.i, sinks.NotConnected(fmt.Errorf("confirm of delivery tag %d lost", t.low)))
		}
	}
	if t.low == c.DeliveryTag {
		t.low++
	}
	p := t.take(c.DeliveryTag)
	t.freed()
	if p == nil {
		return
	}
	switch {
	case !c.Ack:
		p.b.resolve(p.i, errors.New("broker nacked the message"))
	case p.returned != nil:
		p.b.resolve(p.i, p.returned)
	default:
		p.b.resolve(p.i, nil)
	}
}

// park holds messages the channel refused to send because it was closing;
// they fail when it has closed, with the same blame as the messages it
// dropped unconfirmed: the close's reason is their reason too.
func (t *tracker) park(ps ...*pending) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.blame != nil {
		for _, p := range ps {
			p.b.resolve(p.i, t.blame(p))
		}
		return
	}
	t.unsent = append(t.unsent, ps...)
}

// fail settles every pending message with the error blame gives it and
// closes the tracker: the channel is gone, no confirm will come.
func (t *tracker) fail(blame func(*pending) error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.blame = blame
	t.wakeLocked()
	for tag, p := range t.tags {
		delete(t.tags, tag)
		p.b.resolve(p.i, blame(p))
	}
	for _, p := range t.unsent {
		p.b.resolve(p.i, blame(p))
	}
	t.unsent = nil
}

// len is the number of messages waiting for a confirm or for the close.
func (t *tracker) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.tags) + len(t.unsent)
}
