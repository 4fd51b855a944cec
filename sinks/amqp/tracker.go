package amqp

import (
	"errors"
	"fmt"
	"sync"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/sinks"
)

// pending is one published message waiting for its confirm.
type pending struct {
	b        *batch
	i        int
	id       identity
	returned error // set by basic.return, reported when the ack arrives
	size     int   // its content header frame (headerFrameSize)
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

// largest is the largest content header among the messages waiting: the
// suspect when the broker closes the connection over a frame.
func (t *tracker) largest() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, p := range t.tags {
		n = max(n, p.size)
	}
	for _, p := range t.unsent {
		n = max(n, p.size)
	}
	return n
}

// len is the number of messages waiting for a confirm or for the close.
func (t *tracker) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.tags) + len(t.unsent)
}
