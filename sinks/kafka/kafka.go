// Package kafka is the Kafka sink: it writes due messages as records of one
// Kafka topic with github.com/segmentio/kafka-go and returns only after every
// in-sync replica acknowledged them (acks=all).
//
// Each record carries the headers x-delaybridge-id, -topic, -due and
// -attempt plus an envelope's headers, and a key chosen by Config.KeyMode:
// by default the message's own key (a Kafka intake's record key, byte for
// byte), none for a message without one.
// Failures are classified for the forwarder: a record a broker refuses
// because of what it holds (too large, invalid) is permanent; a broker that
// cannot be reached, drops the connection or does not answer within
// Config.WriteTimeout wraps sinks.ErrNotConnected; anything else (unknown
// topic, no leader, not enough replicas, any other broker error) is
// retryable.
//
// Each Publish splits its records by partition (those without a key all to
// one partition, the next in turn for each call; each keyed one where the
// Java client's default partitioner puts it: murmur2 of the key) and sends one produce request per partition at
// once with kafka-go's Client: the Publish calls of different scanners
// overlap instead of queuing behind one batch per partition, and nothing is
// sent for a caller that gave up.
//
// kafka-go has no idempotent producer: a write retried after a lost answer
// may be stored twice. Consumers deduplicate by x-delaybridge-id.
package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/delaybridge/delaybridge/internal/rawio"
	"github.com/delaybridge/delaybridge/sinks"
)

// Sink publishes to one Kafka topic. It is safe for concurrent use: the
// Publish calls of different scanners overlap, each on connections of its
// own (kafka-go's Transport sends one request per connection at a time).
type Sink struct {
	cfg       Config
	log       *slog.Logger
	transport *kafkago.Transport
	addr      net.Addr
	// client sends produce requests, each bounded by Config.WriteTimeout.
	client *kafkago.Client
	// turns picks the partition of a Publish's records without a key (the
	// next in turn); keyed records go where the Java client's murmur2 of
	// the key says.
	turns  kafkago.RoundRobin
	murmur kafkago.Murmur2Balancer
	codec  kafkago.Compression

	ping pingCache

	latch   sinks.Latch
	closing context.Context // done after Close: in-flight Publish calls stop waiting
	shut    context.CancelFunc
	// writes counts the goroutines sending produce requests: Close waits
	// for them, so no request outlives the sink.
	writes sync.WaitGroup
}

var (
	_ sinks.Sink   = (*Sink)(nil)
	_ sinks.Pinger = (*Sink)(nil)
)

// New returns a sink for cfg. It does not connect: the first Publish or Ping
// does. A nil log means slog.Default().
func New(cfg Config, log *slog.Logger) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kafka sink config: %w", err)
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.Default()
	}
	log = log.With("sink", "kafka", "kafka_topic", cfg.Topic)
	mech, _ := mechanism(cfg.SASLMechanism, cfg.SASLUsername, cfg.SASLPassword)
	codec, _ := compression(cfg.Compression)

	transport := &kafkago.Transport{
		Dial:        rawio.Dial(&net.Dialer{Timeout: dialTimeout}),
		DialTimeout: dialTimeout,
		IdleTimeout: 30 * time.Second,
		// Leaders move and topics appear; the sink only learns of it
		// from this cache, so keep it short. It asks for our topic only.
		MetadataTTL:    2 * time.Second,
		MetadataTopics: []string{cfg.Topic},
		ClientID:       cfg.ClientID,
		TLS:            cfg.TLS,
		SASL:           mech,
	}
	addr := kafkago.TCP(cfg.Brokers...)
	closing, shut := context.WithCancel(context.Background())
	return &Sink{
		cfg:       cfg,
		log:       log,
		transport: transport,
		addr:      addr,
		client:    &kafkago.Client{Addr: addr, Transport: transport, Timeout: cfg.WriteTimeout},
		codec:     codec,
		closing:   closing,
		shut:      shut,
	}, nil
}

// Publish writes msgs in order (per partition) and returns after all
// in-sync replicas acknowledged them. See sinks.Sink for the meaning of the
// errors. A message over Config.MaxMessageSize fails permanently without
// being written; the others are written.
//
// The records of each partition go in produce requests of their own, sent
// at once for all partitions: a partition whose leader does not answer
// holds only its own records, for at most Config.WriteTimeout.
func (s *Sink) Publish(ctx context.Context, msgs []sinks.Message) error {
	if !s.latch.Enter() {
		return sinks.ErrClosed
	}
	defer s.latch.Leave()

	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish to kafka topic %s: %w", s.cfg.Topic, err)
	}
	if len(msgs) == 0 {
		return nil
	}

	// Close stops the wait, not the requests on the wire: Close waits for
	// them (each ends within Config.WriteTimeout).
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.closing, func() { cancel(sinks.ErrClosed) })
	defer stop()

	errs := make([]error, len(msgs))
	records := make([]kafkago.Message, 0, len(msgs))
	sent := make([]int, 0, len(msgs)) // records[j] is msgs[sent[j]]
	now := time.Now()
	for i := range msgs {
		r := s.record(&msgs[i], now)
		if err := s.tooLarge(&msgs[i], &r); err != nil {
			errs[i] = sinks.Permanent(err)
			continue
		}
		records = append(records, r)
		sent = append(sent, i)
	}

	if len(records) > 0 {
		if err := s.writeRecords(ctx, wctx, msgs, records, sent, errs); err != nil {
			return err
		}
	}

	for _, err := range errs {
		if err != nil {
			return &sinks.BatchError{Errs: errs}
		}
	}
	return nil
}

// tooLarge says why m, as record r, can never be written, or nil.
func (s *Sink) tooLarge(m *sinks.Message, r *kafkago.Message) error {
	if n := len(m.Body); n > s.cfg.MaxMessageSize {
		return fmt.Errorf("message %s body is %d bytes, over the %d byte limit: %w",
			m.ID, n, s.cfg.MaxMessageSize, kafkago.MessageSizeTooLarge)
	}
	if n := soloBatchSize(r); n > s.cfg.MaxRecordBytes {
		return fmt.Errorf("message %s takes %d bytes as a record, over kafka topic %s's max.message.bytes %d: %w",
			m.ID, n, s.cfg.Topic, s.cfg.MaxRecordBytes, kafkago.MessageSizeTooLarge)
	}
	return nil
}

// record is the Kafka record of m.
func (s *Sink) record(m *sinks.Message, now time.Time) kafkago.Message {
	headers := make([]kafkago.Header, 0, 4+len(m.Headers))
	headers = append(headers,
		kafkago.Header{Key: sinks.HeaderID, Value: []byte(m.ID)},
		kafkago.Header{Key: sinks.HeaderTopic, Value: []byte(m.Topic)},
		kafkago.Header{Key: sinks.HeaderDue, Value: []byte(m.DueHeader())},
		kafkago.Header{Key: sinks.HeaderAttempt, Value: []byte(strconv.Itoa(m.Attempt))},
	)
	if m.Key != "" {
		headers = append(headers, kafkago.Header{Key: sinks.HeaderKey, Value: []byte(m.Key)})
	}
	for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
		switch k {
		case sinks.HeaderID, sinks.HeaderTopic, sinks.HeaderDue, sinks.HeaderAttempt, sinks.HeaderKey:
			continue // ours are authoritative
		}
		headers = append(headers, kafkago.Header{Key: k, Value: []byte(m.Headers[k])})
	}
	value := m.Body
	if value == nil {
		value = []byte{} // a nil value is a tombstone on compacted topics
	}
	return kafkago.Message{
		Key:     s.key(m),
		Value:   value,
		Headers: headers,
		Time:    now,
	}
}

// key is the record key of m: nil (a null key) or the bytes of one, the
// empty key included.
func (s *Sink) key(m *sinks.Message) []byte {
	switch s.cfg.KeyMode {
	case KeyID:
		return []byte(m.ID)
	case KeyEnvelope:
		if m.RoutingKey != "" || m.EmptyKey {
			return append([]byte{}, m.RoutingKey...)
		}
	}
	return nil
}

// Close stops in-flight Publish calls waiting (they return an error
// wrapping sinks.ErrClosed), waits for the produce requests under way to
// end (each within Config.WriteTimeout) and closes the connections.
// Publish returns sinks.ErrClosed afterwards. Close is idempotent.
func (s *Sink) Close() error {
	if !s.latch.Shut() {
		return nil
	}
	s.shut()

	s.latch.Wait()
	s.writes.Wait()
	s.transport.CloseIdleConnections()
	return nil
}

func wrapWrite(topic string, err error) error {
	return fmt.Errorf("write to kafka topic %s: %w", topic, err)
}
