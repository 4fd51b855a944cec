package kafka

import (
	"context"
	"errors"
	"fmt"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/delaybridge/delaybridge/sinks"
)

var _ sinks.Checker = (*Sink)(nil)

// CheckDestination (sinks.Checker) reports whether Config.Topic exists: an
// error wrapping sinks.ErrNoDestination when the brokers do not know it (the
// sink never creates topics), sinks.ErrAuth when they refuse the SASL
// credentials, sinks.ErrNotConnected when they cannot be reached. The answer
// comes from the sink's metadata cache, refreshed every two seconds, so a
// topic created meanwhile is seen soon after.
func (s *Sink) CheckDestination(ctx context.Context) error {
	if !s.latch.Enter() {
		return sinks.NotConnected(sinks.ErrClosed)
	}
	defer s.latch.Leave()
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	c := &kafkago.Client{Addr: s.addr, Transport: s.transport, Timeout: pingTimeout}
	res, err := c.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{s.cfg.Topic}})
	if err != nil {
		return s.unreachable("read metadata of kafka topic "+s.cfg.Topic, err)
	}
	for _, t := range res.Topics {
		if t.Name != s.cfg.Topic || t.Error == nil {
			continue
		}
		if errors.Is(t.Error, kafkago.UnknownTopicOrPartition) {
			return sinks.NoDestination(fmt.Errorf("kafka topic %s does not exist on brokers %v (delaybridge never creates it)", s.cfg.Topic, s.cfg.Brokers))
		}
		if errors.Is(t.Error, kafkago.TopicAuthorizationFailed) {
			return sinks.AuthFailed(fmt.Errorf("kafka topic %s: %w", s.cfg.Topic, t.Error))
		}
		return fmt.Errorf("kafka topic %s: %w", s.cfg.Topic, t.Error)
	}
	return nil
}

// unreachable is the error of a failed round trip to the brokers: refused
// SASL credentials wrap sinks.ErrAuth as well as sinks.ErrNotConnected.
func (s *Sink) unreachable(what string, err error) error {
	err = fmt.Errorf("%s: %w", what, err)
	if authFailure(err) {
		return sinks.NotConnected(sinks.AuthFailed(err))
	}
	return sinks.NotConnected(err)
}

// authFailure reports whether err is the brokers refusing the credentials.
func authFailure(err error) bool {
	return errors.Is(err, kafkago.SASLAuthenticationFailed) ||
		errors.Is(err, kafkago.UnsupportedSASLMechanism) ||
		errors.Is(err, kafkago.IllegalSASLState)
}
