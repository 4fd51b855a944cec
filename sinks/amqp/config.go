package amqp

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// Defaults of the zero fields of Config.
const (
	DefaultMaxMessageSize = 128 << 20 // RabbitMQ's own default max_message_size
	DefaultReconnectMin   = 100 * time.Millisecond
	DefaultReconnectMax   = 5 * time.Second
	DefaultWriteTimeout   = 30 * time.Second
	DefaultMaxUnconfirmed = 1000
)

// Config says where and how the sink publishes.
type Config struct {
	// URL is the broker, amqp:// or amqps://, with credentials and vhost.
	URL string
	// TLS configures amqps connections; nil uses a default configuration
	// with the URL's host as server name.
	TLS *tls.Config
	// Exchange receives every message; "" is the default exchange.
	Exchange string
	// RoutingKey is the routing key of messages that carry none of their own.
	RoutingKey string
	// MaxMessageSize is the largest body published; larger ones fail with
	// sinks.ErrPermanent before publishing. Default 128 MiB.
	MaxMessageSize int64
	// ReconnectMin and ReconnectMax bound the exponential back-off between
	// reconnect attempts. Defaults 100ms and 5s.
	ReconnectMin, ReconnectMax time.Duration
	// WriteTimeout is how long a write to the broker may block (TCP
	// back-pressure from a stalled network) before the connection is
	// dropped and reopened. Default 30s.
	WriteTimeout time.Duration
	// Name is the connection name shown in RabbitMQ's management UI (client
	// property connection_name); "" sends none.
	Name string
	// MaxUnconfirmed is the most messages published on the channel and not
	// yet confirmed by the broker; a publish that would exceed it sends
	// what it wrote and waits for confirms. amqp091-go walks every
	// unconfirmed publish of a channel on each multiple ack, so the CPU
	// per message grows with this window, while a window that covers the
	// broker's confirm round trip at its full rate is all the rate needs.
	// It makes the forwarder's in-flight settings (batches × batch size ×
	// slots) upper bounds rather than what is on the wire. Default 1000.
	MaxUnconfirmed int
	// HoldQueue, when set, is the queue whose ready messages QueueDepth
	// counts (flow control); CheckDestination requires it to exist.
	HoldQueue string
}

// withDefaults fills the zero fields and reports every invalid one.
func (c Config) withDefaults() (Config, error) {
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = DefaultMaxMessageSize
	}
	if c.ReconnectMin == 0 {
		c.ReconnectMin = DefaultReconnectMin
	}
	if c.ReconnectMax == 0 {
		c.ReconnectMax = DefaultReconnectMax
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.MaxUnconfirmed == 0 {
		c.MaxUnconfirmed = DefaultMaxUnconfirmed
	}
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("URL is empty: want amqp://user:pass@host:port/vhost or amqps://"))
	} else if _, err := amqp091.ParseURI(c.URL); err != nil {
		errs = append(errs, fmt.Errorf("URL %q: %w", redact(c.URL), err))
	}
	if c.MaxMessageSize < 0 {
		errs = append(errs, fmt.Errorf("MaxMessageSize %d is negative", c.MaxMessageSize))
	}
	if c.ReconnectMin < 0 || c.ReconnectMax < 0 {
		errs = append(errs, fmt.Errorf("ReconnectMin %v and ReconnectMax %v must be positive", c.ReconnectMin, c.ReconnectMax))
	} else if c.ReconnectMin > c.ReconnectMax {
		errs = append(errs, fmt.Errorf("ReconnectMin %v exceeds ReconnectMax %v", c.ReconnectMin, c.ReconnectMax))
	}
	if c.WriteTimeout < 0 {
		errs = append(errs, fmt.Errorf("WriteTimeout %v is negative", c.WriteTimeout))
	}
	if c.MaxUnconfirmed < 0 {
		errs = append(errs, fmt.Errorf("MaxUnconfirmed %d is negative", c.MaxUnconfirmed))
	}
	return c, errors.Join(errs...)
}

// redact is the URL with its password hidden, for logs and errors.
func redact(raw string) string {
	uri, err := amqp091.ParseURI(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if uri.Password != "" {
		uri.Password = "xxxxx"
	}
	return uri.String()
}
