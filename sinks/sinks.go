// Package sinks defines how delaybridge hands due messages to a broker: the
// Sink interface, the optional interfaces a sink may add (Pinger, Starter),
// the Message it publishes and the errors that tell the forwarder what to do
// with a message that was not confirmed.
//
// Adapters live in sub-packages named after their broker (sinks/amqp,
// sinks/kafka, sinks/redis). They import this package, never the forwarder.
package sinks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header names every delivery carries (AMQP headers, Kafka record headers).
const (
	HeaderID      = "x-delaybridge-id"      // the message id (Kafka; AMQP uses MessageId too)
	HeaderTopic   = "x-delaybridge-topic"   // the delaybridge topic
	HeaderDue     = "x-delaybridge-due"     // due time, Unix ms (int64)
	HeaderAttempt = "x-delaybridge-attempt" // 1-based attempt number
	HeaderKey     = "x-delaybridge-key"     // the message's fair-share key, only when it has one
)

// Message is one due message to publish.
type Message struct {
	// ID is stable across every delivery of the message, so consumers can
	// deduplicate: the hex of the first 16 bytes of SHA-256 of the member, or
	// an envelope's id.
	ID string
	// Topic is the delaybridge topic the message was scheduled in.
	Topic string
	// Body is the payload.
	Body []byte
	// Due is the time the producer asked for.
	Due time.Time
	// Attempt is the 1-based number of this publish attempt.
	Attempt int
	// Headers are extra headers from an envelope (nil for raw members).
	Headers map[string]string
	// RoutingKey is the message's own key (an envelope's routing_key), ""
	// for none: it overrides the AMQP sink's routing key, and is the record
	// key of the Kafka sink in its envelope key mode (the default). It holds
	// bytes, not only text (a Kafka record key).
	RoutingKey string
	// EmptyKey says the message's own key is present and empty (a Kafka
	// record's empty key): the Kafka sink writes an empty key, not a null one.
	EmptyKey bool
	// Properties are AMQP message properties from an envelope (zero for
	// none). Only the AMQP sink publishes them.
	Properties Properties
	// Key is the message's fair-share key (an envelope's key), "" for
	// none; every sink delivers it as HeaderKey (the Redis stream sink as
	// FieldKey) when it is set.
	Key string
}

// Properties are the AMQP message properties a message carries through an
// envelope (queue.Properties; the same fields, so one converts to the
// other). The message id is not among them: it is ID.
type Properties struct {
	ContentType     string
	ContentEncoding string
	CorrelationID   string
	ReplyTo         string
	Expiration      string // per-message TTL in ms, as text; counts from the publish
	Timestamp       int64  // Unix seconds; 0: the publish time
	Type            string
	AppID           string
	Priority        uint8
}

// DueMillis is Due in Unix milliseconds, the value of HeaderDue.
func (m Message) DueMillis() int64 { return m.Due.UnixMilli() }

// DueHeader is HeaderDue's value as text.
func (m Message) DueHeader() string { return strconv.FormatInt(m.DueMillis(), 10) }

// Sink publishes messages to a broker.
//
// Publish returns after the broker confirmed every message of the batch or
// failed them: nil means every message was confirmed (RabbitMQ publisher
// confirm, Kafka acks from all in-sync replicas). A *BatchError says which
// messages failed and why; the rest were confirmed. Any other error means no
// message of the batch was confirmed.
//
// Errors that wrap ErrNotConnected are not the message's fault (the
// connection dropped or is down): the forwarder returns such messages without
// counting an attempt. Errors that wrap ErrPermanent can never succeed (too
// large, refused as invalid): the forwarder dead-letters those at once. Any
// other error is the broker's answer about the message (nack, return,
// rejection) and counts as an attempt.
//
// When ctx ends before the confirms arrive, Publish returns an error wrapping
// ctx.Err(); the messages may have been published (at-least-once).
//
// Publish must be safe for concurrent use and publish the messages of one
// call in order. After Close, Publish returns ErrClosed.
type Sink interface {
	Publish(ctx context.Context, msgs []Message) error
	Close() error
}

// Pinger is implemented by sinks that can tell, cheaply, whether they are
// connected. The forwarder claims nothing while Ping fails, and /readyz
// reports it.
type Pinger interface {
	Ping(ctx context.Context) error
}

// QueueDepther is implemented by sinks that can read the depth of the
// queue they publish to (the AMQP sink's hold queue): the forwarder's flow
// control holds a topic while it is deeper than its limit.
type QueueDepther interface {
	QueueDepth(ctx context.Context) (int, error)
}

// Starter is implemented by sinks that can pipeline publishes: the
// forwarder then starts batch k+1 while the broker still confirms batch k.
//
// Start hands msgs to the broker connection in order, after the messages of
// every Start call that returned before, and returns without waiting for
// the broker: done closes once every message has its answer, and result
// then returns what Publish would have (see Sink). ctx bounds the sending;
// the caller bounds its own wait for done. The forwarder publishes to a
// sink without Start with Publish, from a goroutine of its own.
type Starter interface {
	Start(ctx context.Context, msgs []Message) (done <-chan struct{}, result func() error)
}

// Checker is implemented by sinks that can tell whether their destination
// exists: the AMQP exchange, the Kafka topic, the Redis stream key (absent,
// or a stream). `delaybridge check` and the daemon's /readyz use it, so a
// destination nobody created is reported instead of failing every publish.
//
// CheckDestination makes a round trip to the broker: callers run it
// periodically, not per message. It returns nil when the destination exists
// (or will be created by the first publish), an error wrapping
// ErrNoDestination when it does not, an error wrapping ErrAuth when the
// credentials are refused, and an error wrapping ErrNotConnected when the
// broker cannot be asked now. A missing destination may be created later:
// it is not a reason to stop.
type Checker interface {
	CheckDestination(ctx context.Context) error
}

var (
	// ErrNoDestination marks a publish or a check refused because the
	// destination does not exist or does not route the message (AMQP 404
	// NOT_FOUND, 312 NO_ROUTE; Kafka unknown topic). Such a publish is still
	// the broker's answer about the message and counts as an attempt; the
	// forwarder logs it at WARN since an operator must act.
	ErrNoDestination = errors.New("no such destination")
	// ErrAuth marks a broker refusing the credentials or the access (AMQP
	// 403 ACCESS_REFUSED, 530 NOT_ALLOWED; Kafka SASL failure). Retrying
	// will not help until someone fixes the configuration: `delaybridge
	// check` fails at once on it.
	ErrAuth = errors.New("credentials refused")
	// ErrPermanent marks failures that no retry can fix.
	ErrPermanent = errors.New("permanent failure")
	// ErrNotConnected marks failures caused by the connection, not the message.
	ErrNotConnected = errors.New("sink not connected")
	// ErrClosed is returned by Publish after Close.
	ErrClosed = errors.New("sink closed")
)

// Permanent marks err as permanent.
func Permanent(err error) error { return fmt.Errorf("%w: %w", ErrPermanent, err) }

// NoDestination marks err as a missing destination or an unroutable message.
func NoDestination(err error) error { return fmt.Errorf("%w: %w", ErrNoDestination, err) }

// AuthFailed marks err as refused credentials or access.
func AuthFailed(err error) error { return fmt.Errorf("%w: %w", ErrAuth, err) }

// BlockedError is the failure of a publish while the broker blocks
// publishing (RabbitMQ's connection.blocked, sent while a memory or disk
// alarm lasts). It is a connection failure (errors.Is ErrNotConnected): the
// message goes back without an attempt, and Ping returns it until the block
// lifts, so nothing is claimed meanwhile.
type BlockedError struct {
	Reason string // the broker's words: "low on memory", "low on disk"
}

func (e *BlockedError) Error() string { return "broker blocks publishing: " + e.Reason }

// Is makes a BlockedError a connection failure.
func (e *BlockedError) Is(target error) bool { return target == ErrNotConnected }

// BlockReason is the broker's reason when err says it blocks publishing.
func BlockReason(err error) (string, bool) {
	var b *BlockedError
	if errors.As(err, &b) {
		return b.Reason, true
	}
	return "", false
}

// NotConnected marks err as a connection failure.
func NotConnected(err error) error { return fmt.Errorf("%w: %w", ErrNotConnected, err) }

// BatchError is a partial failure of Publish: Errs has one entry per message
// of the batch, nil for the confirmed ones.
type BatchError struct {
	Errs []error
}

// Failed is how many messages failed.
func (e *BatchError) Failed() int {
	n := 0
	for _, err := range e.Errs {
		if err != nil {
			n++
		}
	}
	return n
}

func (e *BatchError) Error() string {
	var first error
	for _, err := range e.Errs {
		if err != nil {
			first = err
			break
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d messages failed", e.Failed(), len(e.Errs))
	if first != nil {
		fmt.Fprintf(&b, ", first: %v", first)
	}
	return b.String()
}

// Results expands the error of Publish for a batch of n messages into one
// error per message (nil: confirmed).
func Results(err error, n int) []error {
	out := make([]error, n)
	if err == nil {
		return out
	}
	var be *BatchError
	if errors.As(err, &be) && len(be.Errs) == n {
		copy(out, be.Errs)
		return out
	}
	for i := range out {
		out[i] = err
	}
	return out
}
