package intake

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/internal/backoff"
	"github.com/delaybridge/delaybridge/internal/opstext"
	"github.com/delaybridge/delaybridge/internal/rawio"
	"github.com/delaybridge/delaybridge/queue"
)

// Defaults of AMQPConfig.
const (
	// DefaultPrefetch bounds the unacknowledged deliveries an intake holds,
	// and so its largest Redis batch.
	DefaultPrefetch = 256
	// DefaultLagInterval is how often the queue's depth is read.
	DefaultLagInterval = 5 * time.Second
	dialTimeout        = 30 * time.Second
	closeTimeout       = 5 * time.Second
)

// The back-offs: between connection attempts, and after a batch that Redis
// failed (its deliveries went back to the queue), so neither loop spins.
var (
	reconnectPolicy = backoff.Policy{Min: 500 * time.Millisecond, Max: 30 * time.Second, Jitter: 0.2}
	redisPolicy     = backoff.Policy{Min: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2}
)

// AMQPConfig is how an AMQP intake reaches its queue.
type AMQPConfig struct {
	URL string
	TLS *tls.Config // nil: as the URL says
	// Queue is the queue consumed; it must exist (the intake declares
	// nothing, so the queue's type and arguments stay the operator's).
	Queue string
	// Prefetch is the consumer's prefetch count; 0 means DefaultPrefetch.
	Prefetch int
	// Name is the connection_name RabbitMQ shows; "" sends none.
	Name string
	// LagInterval is how often the queue depth is measured; 0 means
	// DefaultLagInterval.
	LagInterval time.Duration
}

// AMQP consumes one queue into one topic. Every replica may run one on the
// same queue: RabbitMQ spreads the deliveries, and ids make a delivery that
// two replicas saw (after a lost ack) one message.
type AMQP struct {
	cfg     AMQPConfig
	target  Target
	sched   *scheduler
	metrics *Metrics
	log     *slog.Logger
	health  health
}

// NewAMQP returns an intake of cfg.Queue into target.
func NewAMQP(cfg AMQPConfig, target Target, q *queue.Queue, m *Metrics, log *slog.Logger) (*AMQP, error) {
	if err := target.validate(); err != nil {
		return nil, err
	}
	if cfg.Queue == "" {
		return nil, fmt.Errorf("intake for topic %s: no queue", target.Topic.Name)
	}
	if cfg.Prefetch <= 0 {
		cfg.Prefetch = DefaultPrefetch
	}
	if cfg.LagInterval <= 0 {
		cfg.LagInterval = DefaultLagInterval
	}
	log = log.With("topic", target.Topic.Name, "queue", cfg.Queue)
	m.Init(target.Topic.Name)
	a := &AMQP{cfg: cfg, target: target, sched: &scheduler{q: q, target: target, metrics: m, log: log,
		source: source{"rabbitmq", cfg.Queue}}, metrics: m, log: log}
	a.health.set(errNotConsuming)
	return a, nil
}

// Health is nil while the intake consumes its queue, else why it does not
// (not started yet, the connection down, the queue missing): what the
// daemon's /readyz reports.
func (a *AMQP) Health() error {
	if err := a.health.get(); err != nil {
		return fmt.Errorf("intake of queue %s: %w", a.cfg.Queue, err)
	}
	return nil
}

// Run consumes until ctx ends, reconnecting with back-off whenever the
// connection or channel is lost. It returns nil once ctx ended; deliveries
// not acknowledged by then go back to the queue.
func (a *AMQP) Run(ctx context.Context) error {
	retry := backoff.New(reconnectPolicy)
	for ctx.Err() == nil {
		consumed, err := a.session(ctx)
		if ctx.Err() != nil {
			break
		}
		a.health.set(err)
		if consumed {
			retry.Reset()
		}
		wait := retry.Next()
		a.log.Warn("intake lost its queue; reconnecting", "retry_in", wait, "err", err)
		sleep(ctx, wait)
	}
	return nil
}

// session connects, consumes until the connection, the channel or ctx
// ends, and says whether it got as far as consuming.
func (a *AMQP) session(ctx context.Context) (bool, error) {
	conn, err := a.dial(ctx)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.CloseDeadline(time.Now().Add(closeTimeout)) }()
	stop := context.AfterFunc(ctx, func() { _ = conn.CloseDeadline(time.Now().Add(closeTimeout)) })
	defer stop()
	ch, err := conn.Channel()
	if err != nil {
		return false, fmt.Errorf("open channel: %w", err)
	}
	if err := ch.Qos(a.cfg.Prefetch, 0, false); err != nil {
		return false, fmt.Errorf("set prefetch %d: %w", a.cfg.Prefetch, err)
	}
	deliveries, err := ch.Consume(a.cfg.Queue, "", false, false, false, false, nil)
	if err != nil {
		return false, fmt.Errorf("consume %s: %w", a.cfg.Queue, err)
	}
	a.log.Info("intake consuming", "prefetch", a.cfg.Prefetch)
	a.health.set(nil)
	// The session's helpers (the lag watch, the delivery relay) end with it.
	sctx, endSession := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { a.watchLag(sctx, conn) })
	defer wg.Wait()
	defer endSession()
	return true, a.consume(ctx, buffer(sctx, deliveries, a.cfg.Prefetch, &wg))
}

// received is a delivery and when the intake took it in: its x-delay
// counts from then, not from its batch's Redis write.
type received struct {
	amqp091.Delivery
	at time.Time
}

// buffer relays deliveries into a channel that holds up to n of them, so
// take finds a batch waiting: amqp091's own channel is unbuffered, and read
// straight from it a batch is one or two deliveries, one Redis round trip
// each. It stamps each with the time it arrived. The relay ends when
// deliveries close or ctx ends (the session's end: deliveries not taken by
// then go back to the queue with the connection), and closes the channel it
// returns; wg waits for it.
func buffer(ctx context.Context, deliveries <-chan amqp091.Delivery, n int, wg *sync.WaitGroup) <-chan received {
	out := make(chan received, n)
	wg.Go(func() {
		defer close(out)
		for {
			var r received
			var ok bool
			select {
			case r.Delivery, ok = <-deliveries:
				if !ok {
					return
				}
				r.at = time.Now()
			case <-ctx.Done():
				return
			}
			select {
			case out <- r:
			case <-ctx.Done():
				return
			}
		}
	})
	return out
}

func (a *AMQP) dial(ctx context.Context) (*amqp091.Connection, error) {
	props := amqp091.NewConnectionProperties()
	if a.cfg.Name != "" {
		props.SetClientConnectionName(a.cfg.Name)
	}
	dial := rawio.Dial(&net.Dialer{Timeout: dialTimeout})
	return amqp091.DialConfig(a.cfg.URL, amqp091.Config{
		TLSClientConfig: a.cfg.TLS,
		Properties:      props,
		Heartbeat:       10 * time.Second,
		Dial: func(network, addr string) (net.Conn, error) {
			return dial(ctx, network, addr)
		},
	})
}

// consume schedules deliveries batch by batch until they end. After a
// batch Redis failed, it waits (a growing back-off) before taking more.
func (a *AMQP) consume(ctx context.Context, deliveries <-chan received) error {
	slow := backoff.New(redisPolicy)
	for {
		batch := take(ctx, deliveries, a.cfg.Prefetch)
		if len(batch) == 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return errors.New("deliveries ended: the channel or connection closed")
		}
		failed, err := a.handle(ctx, batch)
		if err != nil {
			return err
		}
		if failed == nil {
			slow.Reset()
			continue
		}
		wait := slow.Next()
		a.log.Warn("intake could not schedule; deliveries returned to the queue", "count", len(batch), "retry_in", wait, "err", opstext.Wrap(failed))
		sleep(ctx, wait)
	}
}

// take waits for one delivery, then takes whatever else is already there,
// up to max.
func take(ctx context.Context, deliveries <-chan received, max int) []received {
	var batch []received
	select {
	case d, ok := <-deliveries:
		if !ok {
			return nil
		}
		batch = append(batch, d)
	case <-ctx.Done():
		return nil
	}
	for len(batch) < max {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return batch
			}
			batch = append(batch, d)
		default:
			return batch
		}
	}
	return batch
}

// handle writes a batch to Redis, acks what Redis has and returns the rest
// to the queue (nack, requeue). failed is the Redis error, if any; err is
// the channel's, when an ack or nack could not be sent.
func (a *AMQP) handle(ctx context.Context, batch []received) (failed, err error) {
	items := make([]item, len(batch))
	for i, d := range batch {
		items[i] = a.target.deliveryItem(d.Delivery, d.at)
	}
	a.metrics.Received.WithLabelValues(a.target.Topic.Name).Add(float64(len(batch)))
	errs := a.sched.put(ctx, items)
	if !slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		// Every delivery before the batch's last is settled: one ack for all.
		if err := batch[len(batch)-1].Ack(true); err != nil {
			return nil, fmt.Errorf("ack: %w", err)
		}
		return nil, nil
	}
	for i, d := range batch {
		if errs[i] == nil {
			if err := d.Ack(false); err != nil {
				return failed, fmt.Errorf("ack: %w", err)
			}
			continue
		}
		failed = errs[i]
		if err := d.Nack(false, true); err != nil {
			return failed, fmt.Errorf("nack: %w", err)
		}
	}
	return failed, nil
}

// watchLag sets the lag gauge to the queue's ready messages, read with a
// passive declare on a channel of its own, until ctx ends.
func (a *AMQP) watchLag(ctx context.Context, conn *amqp091.Connection) {
	tick := time.NewTicker(a.cfg.LagInterval)
	defer tick.Stop()
	var ch *amqp091.Channel
	defer func() {
		if ch != nil {
			_ = ch.Close()
		}
	}()
	for {
		if ch == nil || ch.IsClosed() {
			ch, _ = conn.Channel()
		}
		if ch != nil {
			if q, err := ch.QueueDeclarePassive(a.cfg.Queue, false, false, false, false, nil); err == nil {
				a.metrics.Lag.WithLabelValues(a.target.Topic.Name).Set(float64(q.Messages))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
