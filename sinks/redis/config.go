package redis

import (
	"errors"
	"fmt"
	"strings"
)

// Size limits of a message body.
const (
	// DefaultMaxMessageSize is the default Config.MaxMessageSize: 128 MiB,
	// as for the RabbitMQ sink.
	DefaultMaxMessageSize = 128 << 20
	// LimitMaxMessageSize is Redis's default proto-max-bulk-len, 512 MiB.
	// Redis answers a longer argument with a protocol error and drops the
	// connection, which would look like an outage instead of a bad message,
	// so Config.MaxMessageSize may not exceed it.
	LimitMaxMessageSize = 512 << 20
)

// Config says which stream the sink appends to and how.
type Config struct {
	// Stream is the key of the Redis stream. Required. XADD creates it on
	// first use; a key of another type fails every message (WRONGTYPE).
	Stream string
	// MaxLen, when positive, trims the stream to about MaxLen entries on
	// every append (XADD MAXLEN ~ MaxLen). Trimming drops the oldest
	// entries whether or not a consumer group has read them. Default 0:
	// never trim.
	MaxLen int64
	// MaxMessageSize is the most bytes a body may have; a larger message
	// fails with sinks.ErrPermanent and is not appended. Default
	// DefaultMaxMessageSize, at most LimitMaxMessageSize.
	MaxMessageSize int
}

func (c Config) withDefaults() Config {
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = DefaultMaxMessageSize
	}
	return c
}

// Validate reports every problem of c (after defaults) at once.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if strings.TrimSpace(c.Stream) == "" {
		errs = append(errs, errors.New("no stream key"))
	}
	if c.MaxLen < 0 {
		errs = append(errs, fmt.Errorf("max length %d is negative", c.MaxLen))
	}
	if c.MaxMessageSize < 0 || c.MaxMessageSize > LimitMaxMessageSize {
		errs = append(errs, fmt.Errorf("max message size %d is not from 1 to %d (Redis's proto-max-bulk-len)", c.MaxMessageSize, LimitMaxMessageSize))
	}
	return errors.Join(errs...)
}
