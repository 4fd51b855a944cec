package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/delaybridge/delaybridge/internal/backoff"
	"github.com/delaybridge/delaybridge/internal/opstext"
	"github.com/delaybridge/delaybridge/queue"
)

// fetchLinger is how long a batch waits for one more record that is not
// already buffered.
const fetchLinger = 5 * time.Millisecond

// KafkaConfig is how a Kafka intake reaches its topic.
type KafkaConfig struct {
	Brokers []string
	// Topic is the Kafka topic consumed.
	Topic string
	// Group is the consumer group; "" means "delaybridge-<topic name>".
	Group string
	// Dialer carries client id, TLS and SASL; nil is kafka-go's default.
	Dialer *kafkago.Dialer
	// Prefetch bounds the records read ahead and the largest Redis batch;
	// 0 means DefaultPrefetch.
	Prefetch int
	// LagInterval is how often the group's lag is read; 0 means
	// DefaultLagInterval.
	LagInterval time.Duration
	// SessionTimeout is the group's session timeout: how long the
	// partitions of a member that died without leaving (SIGKILL, a lost
	// node) stay unread, and the whole group with them while it rebalances.
	// 0 means DefaultSessionTimeout. Heartbeats go every third of it, at
	// most every 3 s.
	SessionTimeout time.Duration
}

// DefaultSessionTimeout is a third of kafka-go's 30 s: a crashed replica's
// partitions resume about 10 s after the crash (the chaos test measured
// 30 s with kafka-go's default), while a GC pause or a network blip of a
// few seconds does not evict a live one (an eviction costs a re-read; ids
// make it harmless).
const DefaultSessionTimeout = 10 * time.Second

// Kafka consumes one Kafka topic into one delaybridge topic in a consumer
// group, committing offsets only after the records before them are in
// Redis.
//
// kafka-go's Reader serves: with a GroupID and CommitInterval 0,
// CommitMessages commits synchronously, so the intake decides exactly when
// an offset moves.
type Kafka struct {
	cfg     KafkaConfig
	target  Target
	sched   *scheduler
	metrics *Metrics
	log     *slog.Logger
	health  health
}

// NewKafka returns an intake of cfg.Topic into target.
func NewKafka(cfg KafkaConfig, target Target, q *queue.Queue, m *Metrics, log *slog.Logger) (*Kafka, error) {
	if err := target.validate(); err != nil {
		return nil, err
	}
	if cfg.Topic == "" || len(cfg.Brokers) == 0 {
		return nil, fmt.Errorf("intake for topic %s: no Kafka topic or brokers", target.Topic.Name)
	}
	if cfg.Group == "" {
		cfg.Group = "delaybridge-" + target.Topic.Name
	}
	if cfg.Prefetch <= 0 {
		cfg.Prefetch = DefaultPrefetch
	}
	if cfg.LagInterval <= 0 {
		cfg.LagInterval = DefaultLagInterval
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	log = log.With("topic", target.Topic.Name, "kafka_topic", cfg.Topic, "group", cfg.Group)
	m.Init(target.Topic.Name)
	return &Kafka{cfg: cfg, target: target, sched: &scheduler{q: q, target: target, metrics: m, log: log,
		source: source{"kafka", cfg.Topic}}, metrics: m, log: log}, nil
}

// Health is nil unless the intake's last read from Kafka failed (kafka-go
// reconnects on its own, so that is what shows a broker it cannot reach)
// or the brokers refused its group (readerError): what the daemon's /readyz
// reports.
func (k *Kafka) Health() error {
	if err := k.health.get(); err != nil {
		return fmt.Errorf("intake of Kafka topic %s: %w", k.cfg.Topic, err)
	}
	return nil
}

// Run consumes until ctx ends. Records read but not yet committed are read
// again by whichever member of the group owns their partition next.
func (k *Kafka) Run(ctx context.Context) error {
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:           k.cfg.Brokers,
		GroupID:           k.cfg.Group,
		Topic:             k.cfg.Topic,
		Dialer:            k.cfg.Dialer,
		QueueCapacity:     k.cfg.Prefetch,
		SessionTimeout:    k.cfg.SessionTimeout,
		HeartbeatInterval: min(k.cfg.SessionTimeout/3, 3*time.Second),
		MaxWait:           500 * time.Millisecond,
		CommitInterval:    0, // synchronous commits, only when the intake calls
		StartOffset:       kafkago.FirstOffset,
		ErrorLogger:       kafkago.LoggerFunc(k.readerError),
	})
	defer func() {
		if err := r.Close(); err != nil {
			k.log.Warn("close kafka reader", "err", err)
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	lctx, stopLag := context.WithCancel(ctx)
	defer stopLag()
	wg.Go(func() { k.watchLag(lctx, r) })
	retry := backoff.New(reconnectPolicy)
	for {
		batch, err := k.fetch(ctx, r)
		if ctx.Err() != nil {
			return nil
		}
		if refused := k.refusal(err); refused != nil {
			// After three refused joins the reader hands the refusal to
			// FetchMessage too.
			k.setRefused(refused)
			sleep(ctx, retry.Next())
			continue
		}
		k.health.set(err)
		if err != nil {
			wait := retry.Next()
			k.log.Warn("intake could not read Kafka", "retry_in", wait, "err", err)
			sleep(ctx, wait)
			continue
		}
		retry.Reset()
		if err := k.handle(ctx, r, batch); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			k.log.Warn("intake could not commit offsets; the records will be read again", "count", len(batch), "err", err)
		}
	}
}

// ErrSessionTimeoutRefused marks brokers refusing the consumer group's
// session timeout (Kafka's INVALID_SESSION_TIMEOUT): the group is never
// joined, so nothing is consumed until the timeout lies within the brokers'
// group.min.session.timeout.ms and group.max.session.timeout.ms.
var ErrSessionTimeoutRefused = errors.New("the brokers refuse the consumer group's session timeout")

// errAccessRefused marks brokers refusing the group or topic to the
// intake's credentials.
var errAccessRefused = errors.New("the brokers refuse access")

// isRefusal reports whether err is a refusal of the group (refusal).
func isRefusal(err error) bool {
	return errors.Is(err, ErrSessionTimeoutRefused) || errors.Is(err, errAccessRefused)
}

// readerError is the reader's error log. kafka-go retries a refused join
// in the background, and FetchMessage only waits meanwhile (it returns the
// error after three refused joins, about 10 s): a refusal no retry can mend
// (the session timeout, the group's or topic's authorization) becomes the
// intake's health from the first one, so /readyz says why nothing is
// consumed, and is logged at ERROR when it first comes. A record fetched
// (Run) or a group joined (watchLag) clears it.
func (k *Kafka) readerError(format string, args ...any) {
	for _, a := range args {
		if err, ok := a.(error); ok {
			if refused := k.refusal(err); refused != nil {
				k.setRefused(refused)
				return
			}
		}
	}
	k.log.Warn("kafka reader: " + fmt.Sprintf(format, args...))
}

// setRefused makes a refusal of the group the intake's health, logged at
// ERROR when it is not the health already.
func (k *Kafka) setRefused(err error) {
	if prev := k.health.get(); prev == nil || prev.Error() != err.Error() {
		k.log.Error("intake cannot join its consumer group; nothing is consumed until this is fixed", "err", err)
	}
	k.health.set(err)
}

// refusal is err as a refusal of the group that no retry mends, or nil
// when it is not one (nil included).
func (k *Kafka) refusal(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kafkago.InvalidSessionTimeout):
		return fmt.Errorf("%w %s: it must lie within their group.min.session.timeout.ms and group.max.session.timeout.ms (6 s and 30 min by default): %w",
			ErrSessionTimeoutRefused, k.cfg.SessionTimeout, err)
	case errors.Is(err, kafkago.GroupAuthorizationFailed), errors.Is(err, kafkago.TopicAuthorizationFailed),
		errors.Is(err, kafkago.SASLAuthenticationFailed):
		return fmt.Errorf("%w to group %s: %w", errAccessRefused, k.cfg.Group, err)
	}
	return nil
}

// watchLag sets the lag gauge from the reader's statistics every
// LagInterval until ctx ends, so the gauge follows the group when no batch
// comes (the reader keeps polling Kafka meanwhile) instead of keeping what
// it was after the last one. A group joined since the last look clears a
// refusal of it (readerError): the brokers accept it now.
func (k *Kafka) watchLag(ctx context.Context, r *kafkago.Reader) {
	tick := time.NewTicker(k.cfg.LagInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			st := r.Stats() // counters since the last call
			k.metrics.Lag.WithLabelValues(k.target.Topic.Name).Set(float64(max(st.Lag, 0)))
			if st.Rebalances > 0 { // a generation of the group was joined
				k.health.clearIf(isRefusal)
			}
		}
	}
}

// fetch waits for one record, then takes what follows at once, up to
// Prefetch.
func (k *Kafka) fetch(ctx context.Context, r *kafkago.Reader) ([]kafkago.Message, error) {
	m, err := r.FetchMessage(ctx)
	if err != nil {
		return nil, fmt.Errorf("fetch from %s: %w", k.cfg.Topic, err)
	}
	batch := []kafkago.Message{m}
	for len(batch) < k.cfg.Prefetch {
		lctx, cancel := context.WithTimeout(ctx, fetchLinger)
		m, err := r.FetchMessage(lctx)
		cancel()
		if err != nil {
			break // nothing more buffered (or ctx ended: Run sees it)
		}
		batch = append(batch, m)
	}
	return batch, nil
}

// handle writes a batch to Redis, retrying what Redis failed (a record
// cannot be handed back as an AMQP delivery can, and must not be skipped)
// until it is in or ctx ends, then commits the batch's offsets.
func (k *Kafka) handle(ctx context.Context, r *kafkago.Reader, batch []kafkago.Message) error {
	items := make([]item, len(batch))
	for i, m := range batch {
		items[i] = k.target.recordItem(m)
	}
	k.metrics.Received.WithLabelValues(k.target.Topic.Name).Add(float64(len(batch)))
	slow := backoff.New(redisPolicy)
	for pending := items; len(pending) > 0; {
		errs := k.sched.put(ctx, pending)
		var again []item
		var failed error
		for i, err := range errs {
			if err != nil {
				again, failed = append(again, pending[i]), err
			}
		}
		if len(again) > 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			wait := slow.Next()
			k.log.Warn("intake could not schedule; retrying", "count", len(again), "retry_in", wait, "err", opstext.Wrap(failed))
			sleep(ctx, wait)
		}
		pending = again
	}
	if err := r.CommitMessages(ctx, batch...); err != nil {
		return fmt.Errorf("commit %d records: %w", len(batch), err)
	}
	return nil
}
