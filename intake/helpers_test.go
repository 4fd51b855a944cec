package intake

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func amqpURL() string {
	if u := os.Getenv("DELAYBRIDGE_TEST_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

func testLog(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// rabbit is one test's RabbitMQ objects: producers publish to In (a plain
// topic exchange bound to the intake queue Queue with "#"); delivered
// messages go to Dest, bound to DestQueue with "#". All are deleted at the
// end.
type rabbit struct {
	ch                         *amqp091.Channel
	In, Queue, Dest, DestQueue string
}

func newRabbit(t testing.TB) *rabbit {
	t.Helper()
	conn, err := amqp091.Dial(amqpURL())
	if err != nil {
		t.Fatalf("RabbitMQ at %s is required: %v", amqpURL(), err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	u := redistest.Suffix()
	r := &rabbit{ch: ch, In: "in-" + u, Queue: "intake-" + u, Dest: "dest-" + u, DestQueue: "dest-q-" + u}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ch.ExchangeDeclare(r.In, "topic", false, false, false, false, nil))
	must(ch.ExchangeDeclare(r.Dest, "topic", false, false, false, false, nil))
	_, err = ch.QueueDeclare(r.Queue, false, false, false, false, nil)
	must(err)
	_, err = ch.QueueDeclare(r.DestQueue, false, false, false, false, nil)
	must(err)
	must(ch.QueueBind(r.Queue, "#", r.In, false, nil))
	must(ch.QueueBind(r.DestQueue, "#", r.Dest, false, nil))
	t.Cleanup(func() {
		_, _ = ch.QueueDelete(r.Queue, false, false, false)
		_, _ = ch.QueueDelete(r.DestQueue, false, false, false)
		_ = ch.ExchangeDelete(r.In, false, false)
		_ = ch.ExchangeDelete(r.Dest, false, false)
		_ = conn.Close()
	})
	return r
}

// publish sends p to the intake exchange with routing key.
func (r *rabbit) publish(t *testing.T, key string, p amqp091.Publishing) {
	t.Helper()
	if err := r.ch.PublishWithContext(context.Background(), r.In, key, false, false, p); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

// depth is how many messages the queue holds (ready).
func (r *rabbit) depth(t *testing.T, q string) int {
	t.Helper()
	info, err := r.ch.QueueDeclarePassive(q, false, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspect %s: %v", q, err)
	}
	return info.Messages
}

// fixture is one test's Redis topic and intake metrics.
type fixture struct {
	rdb     *redis.Client
	topic   queue.Topic
	reg     *prometheus.Registry
	metrics *Metrics
}

func newFixture(t testing.TB, slots int) *fixture {
	rdb, prefix := redistest.New(t)
	reg := prometheus.NewRegistry()
	return &fixture{
		rdb:     rdb,
		topic:   queue.Topic{Name: "orders", Prefix: prefix, Slots: slots, Format: queue.FormatEnvelope},
		reg:     reg,
		metrics: NewMetrics(reg),
	}
}

// run runs fn until the test ends, then waits for it.
func run(t testing.TB, fn func(ctx context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("run: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// startAMQP runs an intake of r.Queue into f's topic over rdb.
func (f *fixture) startAMQP(t *testing.T, r *rabbit, rdb redis.UniversalClient, maxBody int) func() {
	t.Helper()
	in, err := NewAMQP(AMQPConfig{URL: amqpURL(), Queue: r.Queue, Prefetch: 32, LagInterval: 200 * time.Millisecond},
		Target{Topic: f.topic, MaxBody: maxBody}, queue.New(rdb), f.metrics, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	return run(t, in.Run)
}

// scheduled is how many members the topic's scheduled sets hold.
func (f *fixture) scheduled(t *testing.T) int64 {
	t.Helper()
	var n int64
	for s := range f.topic.SlotCount() {
		c, err := f.rdb.ZCard(context.Background(), f.topic.Keys(s).Scheduled).Result()
		if err != nil {
			t.Fatal(err)
		}
		n += c
	}
	return n
}

func (f *fixture) counter(c *prometheus.CounterVec, labels ...string) float64 {
	return testutil.ToFloat64(c.WithLabelValues(labels...))
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testutilGauge(g *prometheus.GaugeVec, labels ...string) float64 {
	return testutil.ToFloat64(g.WithLabelValues(labels...))
}
