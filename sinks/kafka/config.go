package kafka

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// Key modes: what a record's key is.
const (
	KeyNone     = "none"     // no key, even for a message that has its own: each Publish's records go to one partition, the partitions taken in turn
	KeyID       = "id"       // the message id, even for a message that has its own key: every delivery of a message lands in one partition
	KeyEnvelope = "envelope" // the default: the message's own key (Message.RoutingKey, EmptyKey), byte for byte; none without one
)

// Size defaults.
const (
	// DefaultMaxMessageSize is the default Config.MaxMessageSize: 1 MiB.
	DefaultMaxMessageSize = 1 << 20
	// DefaultMaxRecordBytes is Kafka's default message.max.bytes (1 MiB + 12).
	DefaultMaxRecordBytes = 1048588
)

// DefaultBatchSize is the default Config.BatchSize.
const DefaultBatchSize = 1000

// Config is how the sink reaches Kafka and shapes its records.
type Config struct {
	// Brokers are the bootstrap brokers, host:port. Required.
	Brokers []string
	// Topic is the Kafka topic. Required. The sink never creates it.
	Topic string
	// KeyMode is KeyEnvelope (the default when empty), KeyNone or KeyID.
	// A keyed record is partitioned by the Java client's murmur2 hash of
	// its key, so other producers keying the same topic agree on partitions.
	KeyMode string
	// ClientID is sent to the brokers; default "delaybridge".
	ClientID string
	// Compression is none (default when empty), gzip, snappy, lz4 or zstd.
	Compression string
	// TLS, when not nil, connects with TLS.
	TLS *tls.Config
	// SASLMechanism is "" (none), plain, scram-sha-256 or scram-sha-512.
	SASLMechanism string
	SASLUsername  string
	SASLPassword  string
	// MaxMessageSize is the most bytes a message's body may have, as for
	// every sink. A larger message fails with a permanent error before
	// anything is written. Default DefaultMaxMessageSize.
	MaxMessageSize int
	// MaxRecordBytes is the topic's max.message.bytes: the most bytes the
	// broker takes in one record batch. A message whose record alone (key,
	// headers and framing included, counted uncompressed, so stricter than
	// the broker, which counts compressed batches) is larger fails with a
	// permanent error before anything is written, and the records of a
	// Publish are split into produce requests that stay under it. Default
	// DefaultMaxRecordBytes.
	MaxRecordBytes int
	// BatchSize is the most records the sink puts in one produce request
	// per partition; a larger Publish is split into several requests, sent
	// one after the other, in order.
	// Default DefaultBatchSize.
	BatchSize int
	// WriteTimeout bounds one produce request (waiting for the acks of all
	// in-sync replicas included); default 10s. A request that times out is
	// not retried; one that fails at once for a temporary reason (a broken
	// pooled connection, a leader moving) is retried once. Keep
	// 2×WriteTimeout well under the forwarder's lease.
	WriteTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.KeyMode == "" {
		c.KeyMode = KeyEnvelope
	}
	if c.ClientID == "" {
		c.ClientID = "delaybridge"
	}
	if c.Compression == "" {
		c.Compression = "none"
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = DefaultMaxMessageSize
	}
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 10 * time.Second
	}
	return c
}

// Validate reports every problem of c (after defaults) at once.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("no brokers"))
	}
	for _, b := range c.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			errs = append(errs, fmt.Errorf("broker %q is not host:port: %w", b, err))
		}
	}
	if c.Topic == "" {
		errs = append(errs, errors.New("no topic"))
	}
	switch c.KeyMode {
	case KeyNone, KeyID, KeyEnvelope:
	default:
		errs = append(errs, fmt.Errorf("key mode %q is not none, id or envelope", c.KeyMode))
	}
	if _, err := compression(c.Compression); err != nil {
		errs = append(errs, err)
	}
	if _, err := mechanism(c.SASLMechanism, c.SASLUsername, c.SASLPassword); err != nil {
		errs = append(errs, err)
	}
	if c.MaxMessageSize < 0 {
		errs = append(errs, fmt.Errorf("max message size %d is negative", c.MaxMessageSize))
	}
	// A record batch header alone is recordBatchOverhead bytes.
	if c.MaxRecordBytes <= minRecordBytes {
		errs = append(errs, fmt.Errorf("max record bytes %d must be more than %d", c.MaxRecordBytes, minRecordBytes))
	}
	if c.BatchSize < 0 {
		errs = append(errs, fmt.Errorf("batch size %d is negative", c.BatchSize))
	}
	if c.WriteTimeout < 0 {
		errs = append(errs, fmt.Errorf("write timeout %s is negative", c.WriteTimeout))
	}
	return errors.Join(errs...)
}

func compression(name string) (kafkago.Compression, error) {
	switch name {
	case "", "none":
		return 0, nil
	case "gzip":
		return kafkago.Gzip, nil
	case "snappy":
		return kafkago.Snappy, nil
	case "lz4":
		return kafkago.Lz4, nil
	case "zstd":
		return kafkago.Zstd, nil
	}
	return 0, fmt.Errorf("compression %q is not none, gzip, snappy, lz4 or zstd", name)
}

func mechanism(name, user, pass string) (sasl.Mechanism, error) {
	if name != "" && (user == "" || pass == "") {
		return nil, fmt.Errorf("sasl mechanism %q needs a username and a password", name)
	}
	switch name {
	case "":
		return nil, nil
	case "plain":
		return plain.Mechanism{Username: user, Password: pass}, nil
	case "scram-sha-256":
		m, err := scram.Mechanism(scram.SHA256, user, pass)
		if err != nil {
			return nil, fmt.Errorf("sasl scram-sha-256: %w", err)
		}
		return m, nil
	case "scram-sha-512":
		m, err := scram.Mechanism(scram.SHA512, user, pass)
		if err != nil {
			return nil, fmt.Errorf("sasl scram-sha-512: %w", err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("sasl mechanism %q is not plain, scram-sha-256 or scram-sha-512", name)
}
