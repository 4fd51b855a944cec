package kafka

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/delaybridge/delaybridge/sinks"
)

// recordRejected reports whether err is a broker's refusal of a record
// batch because of what is in it. Kafka answers a produce request per
// partition batch, so every record of the batch gets the refusal, though
// usually only one record caused it: Publish resends such records alone to
// find out which.
func recordRejected(err error) bool {
	var kerr kafkago.Error
	if !errors.As(err, &kerr) {
		return false
	}
	switch kerr {
	case kafkago.MessageSizeTooLarge, // the batch is over message.max.bytes
		kafkago.RecordListTooLarge, // the batch is over the segment size
		kafkago.InvalidRecord,      // a record broke a topic rule (e.g. a compacted topic needs keys)
		kafkago.InvalidTimestamp:   // a timestamp is out of the topic's range
		return true
	}
	return false
}

// notConnected reports whether err means the brokers could not be reached,
// the connection broke or the broker did not answer in time: no verdict on
// the message. (A broker that answers REQUEST_TIMED_OUT did answer.)
func notConnected(err error) bool {
	// kafka-go's own deadline for a request; Publish has checked that the
	// caller's context is still live before it classifies.
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) { // dial refused or timed out, no route, reset
		return true
	}
	var kerr kafkago.Error
	if errors.As(err, &kerr) {
		switch kerr {
		case kafkago.BrokerNotAvailable, // the transport knows no such broker (yet)
			kafkago.NetworkException,         // the broker dropped the connection
			kafkago.SASLAuthenticationFailed, // cannot log in: no write can succeed
			kafkago.UnsupportedSASLMechanism,
			kafkago.IllegalSASLState:
			return true
		}
		return false
	}
	return errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH)
}

// classify turns a kafka-go error about a write into the sinks error
// classes. Anything not known to be a connection problem or the record's
// own fault is retryable and counts as an attempt: unknown topic, leader not
// available, not enough replicas, request timed out, throttling.
func classify(topic string, err error) error {
	switch {
	case errors.Is(err, io.ErrClosedPipe): // the writer was closed
		return sinks.ErrClosed
	case notConnected(err) && authFailure(err):
		return sinks.NotConnected(sinks.AuthFailed(wrapWrite(topic, err)))
	case notConnected(err):
		return sinks.NotConnected(wrapWrite(topic, err))
	case errors.Is(err, kafkago.UnknownTopicOrPartition):
		return sinks.NoDestination(wrapWrite(topic, err))
	}
	return wrapWrite(topic, err)
}
