package kafka

import (
	"net"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/delaybridge/delaybridge/internal/rawio"
)

// dialTimeout bounds a connection to a broker, the sink's and the intake's.
const dialTimeout = 5 * time.Second

// Dialer is a kafka-go Dialer with cfg's client id, TLS and SASL, for the
// clients beside the sink that reach the same cluster (the Kafka intake).
func (c Config) Dialer() (*kafkago.Dialer, error) {
	c = c.withDefaults()
	mech, err := mechanism(c.SASLMechanism, c.SASLUsername, c.SASLPassword)
	if err != nil {
		return nil, err
	}
	return &kafkago.Dialer{
		ClientID:      c.ClientID,
		Timeout:       dialTimeout,
		TLS:           c.TLS,
		SASLMechanism: mech,
		Resolver:      &net.Resolver{},
		DialFunc:      rawio.Dial(&net.Dialer{Timeout: dialTimeout}),
	}, nil
}
