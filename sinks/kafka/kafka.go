// Package kafka is the Kafka sink: it writes due messages as records of one
// Kafka topic with github.com/segmentio/kafka-go and returns only after every
// in-sync replica acknowledged them (acks=all).
//
// Each record carries the headers x-delaybridge-id, -topic, -due and
// -attempt plus an envelope's headers, and a key chosen by Config.KeyMode.
// Failures are classified for the forwarder: a record a broker refuses
// because of what it holds (too large, invalid) is permanent; a broker that
// cannot be reached, drops the connection or does not answer within
// Config.WriteTimeout wraps sinks.ErrNotConnected; anything else (unknown
// topic, no leader, not enough replicas, any other broker error) is
// retryable.
//
// kafka-go has no idempotent producer: a write retried after a lost answer
// may be stored twice. Consumers deduplicate by x-delaybridge-id.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/delaybridge/delaybridge/sinks"
)

// Sink publishes to one Kafka topic. It is safe for concurrent use.
type Sink struct {
	cfg       Config
	log       *slog.Logger
	transport *kafkago.Transport
	addr      net.Addr

	// writer batches the records of a Publish per partition; solo sends one
	// record per produce request, to find which record a broker refused.
	writer *kafkago.Writer
	solo   *kafkago.Writer

	ping pingCache

	mu       sync.Mutex
	closed   bool
	closing  context.Context // done after Close: in-flight Publish calls stop waiting
	shut     context.CancelFunc
	inflight sync.WaitGroup
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

	dialTimeout := 5 * time.Second
	transport := &kafkago.Transport{
		Dial:        (&net.Dialer{Timeout: dialTimeout}).DialContext,
		DialTimeout: dialTimeout,
		IdleTimeout: 30 * time.Second,
		// Leaders move and topics appear; the writer only learns of it
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
		writer:    newWriter(cfg, transport, addr, log, cfg.BatchSize),
		solo:      newWriter(cfg, transport, addr, log, 1),
		closing:   closing,
		shut:      shut,
	}, nil
}

// newWriter is a writer of cfg.Topic that sends up to batchSize records per
// produce request.
func newWriter(cfg Config, transport *kafkago.Transport, addr net.Addr, log *slog.Logger, batchSize int) *kafkago.Writer {
	codec, _ := compression(cfg.Compression)
	errLog := kafkago.LoggerFunc(func(msg string, args ...any) {
		log.Debug("kafka-go: " + fmt.Sprintf(msg, args...))
	})
	var balancer kafkago.Balancer = &kafkago.RoundRobin{}
	if cfg.KeyMode != KeyNone {
		// Java-compatible partitioning; records without a key go to a
		// random partition.
		balancer = kafkago.Murmur2Balancer{}
	}
	return &kafkago.Writer{
		Addr:         addr,
		Topic:        cfg.Topic,
		Balancer:     balancer,
		RequiredAcks: kafkago.RequireAll,
		// The forwarder retries with back-off; one quick retry here
		// hides a pooled connection the broker closed while idle.
		MaxAttempts:     2,
		WriteBackoffMin: 20 * time.Millisecond,
		WriteBackoffMax: 100 * time.Millisecond,
		BatchSize:       batchSize,
		BatchBytes:      batchBytes(cfg.MaxRecordBytes),
		// Publish waits for the acks; the default 1s would make every
		// call wait that long for more records.
		BatchTimeout:           time.Millisecond,
		ReadTimeout:            5 * time.Second,
		WriteTimeout:           cfg.WriteTimeout,
		Compression:            codec,
		Transport:              transport,
		AllowAutoTopicCreation: false,
		ErrorLogger:            errLog,
	}
}

// Publish writes msgs in order (per partition) and returns after all
// in-sync replicas acknowledged them. See sinks.Sink for the meaning of the
// errors. A message over Config.MaxMessageSize fails permanently without
// being written; the others are written.
func (s *Sink) Publish(ctx context.Context, msgs []sinks.Message) error {
	if !s.enter() {
		return sinks.ErrClosed
	}
	defer s.inflight.Done()

	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish to kafka topic %s: %w", s.cfg.Topic, err)
	}
	if len(msgs) == 0 {
		return nil
	}

	// Close stops the wait, not the write: kafka-go finishes it in the
	// background and Writer.Close waits for it.
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

// writeRecords writes records in one call (records[j] is msgs[sent[j]])
// and sets errs[sent[j]] for each record that failed; the records a broker
// refused for their content are resent alone first. It returns an error
// instead when the call was interrupted, or when it wrote nothing and every
// message of msgs was in it.
func (s *Sink) writeRecords(ctx, wctx context.Context, msgs []sinks.Message, records []kafkago.Message, sent []int, errs []error) error {
	err := s.writer.WriteMessages(wctx, records...)
	if ierr := s.interrupted(ctx, wctx); err != nil && ierr != nil {
		return ierr
	}
	var werrs kafkago.WriteErrors
	switch {
	case err == nil:
	case errors.As(err, &werrs) && len(werrs) == len(records):
		var rejected []int // indexes into records
		for j, e := range werrs {
			switch {
			case e == nil:
			case recordRejected(e):
				rejected = append(rejected, j)
			default:
				errs[sent[j]] = classify(s.cfg.Topic, e)
			}
		}
		return s.resendAlone(ctx, wctx, msgs, records, sent, rejected, errs)
	default:
		// Nothing was written (metadata, unknown topic, refused dial).
		if len(records) == len(msgs) {
			return classify(s.cfg.Topic, err)
		}
		for _, i := range sent {
			errs[i] = classify(s.cfg.Topic, err)
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
	// kafka-go would refuse the whole call for a record over its estimate;
	// soloBatchSize keeps it from happening, this makes sure.
	if n := soloBatchSize(r); n > s.cfg.MaxRecordBytes || int64(kafkaGoSize(r)) > batchBytes(s.cfg.MaxRecordBytes) {
		return fmt.Errorf("message %s takes %d bytes as a record, over kafka topic %s's max.message.bytes %d: %w",
			m.ID, n, s.cfg.Topic, s.cfg.MaxRecordBytes, kafkago.MessageSizeTooLarge)
	}
	return nil
}

// resendAlone writes each rejected record in a produce request of its own,
// in order, so the broker's answer is about that record only: the others of
// its batch were refused with it. A refusal now is permanent.
func (s *Sink) resendAlone(ctx, wctx context.Context, msgs []sinks.Message, records []kafkago.Message, sent, rejected []int, errs []error) error {
	if len(rejected) > 0 {
		s.log.Warn("kafka refused a batch for its content; resending its records one by one", "count", len(rejected))
	}
	for _, j := range rejected {
		i := sent[j]
		err := s.solo.WriteMessages(wctx, records[j])
		if ierr := s.interrupted(ctx, wctx); err != nil && ierr != nil {
			return ierr
		}
		var werrs kafkago.WriteErrors
		if errors.As(err, &werrs) && len(werrs) == 1 {
			err = werrs[0]
		}
		switch {
		case err == nil:
		case recordRejected(err):
			errs[i] = sinks.Permanent(fmt.Errorf("kafka topic %s refused message %s: %w", s.cfg.Topic, msgs[i].ID, err))
		default:
			errs[i] = classify(s.cfg.Topic, err)
		}
	}
	return nil
}

// interrupted is the error of a Publish whose wait ended early, or nil: the
// caller's ctx ended or the sink closed. The records may have been written.
// It is checked before a write error is classified, so that the
// DeadlineExceeded of the caller is not taken for kafka-go's own.
func (s *Sink) interrupted(ctx, wctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish to kafka topic %s: %w", s.cfg.Topic, err)
	}
	if errors.Is(context.Cause(wctx), sinks.ErrClosed) {
		return fmt.Errorf("publish to kafka topic %s: %w", s.cfg.Topic, sinks.ErrClosed)
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
	for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
		switch k {
		case sinks.HeaderID, sinks.HeaderTopic, sinks.HeaderDue, sinks.HeaderAttempt:
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

func (s *Sink) key(m *sinks.Message) []byte {
	switch s.cfg.KeyMode {
	case KeyID:
		return []byte(m.ID)
	case KeyEnvelope:
		if m.RoutingKey != "" {
			return []byte(m.RoutingKey)
		}
	}
	return nil
}

// enter registers a call that uses the connections; false after Close.
// The caller calls s.inflight.Done when it ends.
func (s *Sink) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.inflight.Add(1)
	return true
}

// Close stops in-flight Publish calls waiting (they return an error
// wrapping sinks.ErrClosed), waits for the writes under way to end (at most
// two attempts of Config.WriteTimeout each) and closes the connections.
// Publish returns sinks.ErrClosed afterwards. Close is idempotent.
func (s *Sink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.shut()

	s.inflight.Wait()
	err := errors.Join(s.writer.Close(), s.solo.Close())
	s.transport.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("close kafka writer: %w", err)
	}
	return nil
}

func wrapWrite(topic string, err error) error {
	return fmt.Errorf("write to kafka topic %s: %w", topic, err)
}
