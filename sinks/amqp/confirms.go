package amqp

import (
	"errors"
	"fmt"
	"regexp"
	"sync"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/sinks"
)

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
type tracker struct {
	mu     sync.Mutex
	tags   map[uint64]*pending
	low    uint64               // lowest tag whose confirm has not been seen
	unsent []*pending           // publish refused by the closing channel
	blame  func(*pending) error // set when the channel ended
}

func newTracker() *tracker {
	return &tracker{tags: make(map[uint64]*pending), low: 1}
}

// add registers tag before its message is published. False: the channel is
// gone, do not publish.
func (t *tracker) add(tag uint64, p *pending) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.blame != nil {
		return false
	}
	t.tags[tag] = p
	return true
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
		first.returned = fmt.Errorf("unroutable: %d %s", ret.ReplyCode, ret.ReplyText)
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
func blameFor(closeErr *amqp091.Error, connClosed bool) func(*pending) error {
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
	return func(p *pending) error {
		if p.id.exchange == m[1] {
			return answer
		}
		return others
	}
}
