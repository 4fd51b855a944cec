package amqp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	"go.uber.org/goleak"

	"github.com/delaybridge/delaybridge/sinks"
	"github.com/delaybridge/delaybridge/sinks/sinktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testURL() string {
	if u := os.Getenv("DELAYBRIDGE_TEST_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// brokerAddr is host:port of the test broker, for the fault proxy.
func brokerAddr(t *testing.T) string {
	t.Helper()
	uri, err := amqp091.ParseURI(testURL())
	if err != nil {
		t.Fatalf("parse DELAYBRIDGE_TEST_AMQP_URL: %v", err)
	}
	return fmt.Sprintf("%s:%d", uri.Host, uri.Port)
}

// viaProxy is the test URL with its host:port replaced by addr.
func viaProxy(t *testing.T, addr string) string {
	t.Helper()
	uri, err := amqp091.ParseURI(testURL())
	if err != nil {
		t.Fatalf("parse DELAYBRIDGE_TEST_AMQP_URL: %v", err)
	}
	host, port, _ := strings.Cut(addr, ":")
	uri.Host = host
	uri.Port, _ = strconv.Atoi(port)
	return uri.String()
}

// adminConn is a connection of the test's own, to declare, delete and
// consume. A missing broker fails the test loudly.
func adminConn(t *testing.T) *amqp091.Connection {
	t.Helper()
	conn, err := amqp091.Dial(testURL())
	if err != nil {
		t.Fatalf("RabbitMQ at %s unreachable (set DELAYBRIDGE_TEST_AMQP_URL): %v", redact(testURL()), err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func uniqueName(t *testing.T) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := strings.NewReplacer("/", ".", " ", "_").Replace(t.Name())
	return "dbtest." + name + "." + hex.EncodeToString(b)
}

func channel(t *testing.T, conn *amqp091.Connection) *amqp091.Channel {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("open channel: %v", err)
	}
	return ch
}

// dest is a test's own exchange, queue and binding.
type dest struct {
	conn            *amqp091.Connection
	exchange, queue string
	key             string
	queueArgs       amqp091.Table
	withoutQueue    bool
	cleanupOnce     sync.Once
}

// declare declares d's exchange and, unless withoutQueue, its queue
// bound with d.key. Cleanup deletes both.
func (d *dest) declare(t *testing.T) {
	t.Helper()
	ch := channel(t, d.conn)
	defer func() { _ = ch.Close() }()
	if err := ch.ExchangeDeclare(d.exchange, "direct", false, false, false, false, nil); err != nil {
		t.Fatalf("declare exchange %s: %v", d.exchange, err)
	}
	if !d.withoutQueue {
		if _, err := ch.QueueDeclare(d.queue, false, false, false, false, d.queueArgs); err != nil {
			t.Fatalf("declare queue %s: %v", d.queue, err)
		}
		if err := ch.QueueBind(d.queue, d.key, d.exchange, false, nil); err != nil {
			t.Fatalf("bind queue %s: %v", d.queue, err)
		}
	}
	d.cleanupOnce.Do(func() {
		t.Cleanup(func() {
			ch, err := d.conn.Channel()
			if err != nil {
				return
			}
			defer func() { _ = ch.Close() }()
			_, _ = ch.QueueDelete(d.queue, false, false, false)
			_ = ch.ExchangeDelete(d.exchange, false, false)
		})
	})
}

// bind binds d's queue to its exchange with each of keys as well, so that
// messages with those routing keys reach it. Deleting the queue (cleanup)
// removes the bindings.
func (d *dest) bind(t *testing.T, keys ...string) {
	t.Helper()
	if len(keys) == 0 {
		return
	}
	ch := channel(t, d.conn)
	defer func() { _ = ch.Close() }()
	for _, k := range keys {
		if err := ch.QueueBind(d.queue, k, d.exchange, false, nil); err != nil {
			t.Fatalf("bind queue %s with %q: %v", d.queue, k, err)
		}
	}
}

func (d *dest) deleteExchange(t *testing.T) {
	t.Helper()
	ch := channel(t, d.conn)
	defer func() { _ = ch.Close() }()
	if err := ch.ExchangeDelete(d.exchange, false, false); err != nil {
		t.Fatalf("delete exchange %s: %v", d.exchange, err)
	}
}

// testKey is the routing key newDest binds and the sink of newSink
// publishes with.
const testKey = "rk"

// newDest declares a fresh direct exchange and a queue bound with testKey.
func newDest(t *testing.T, queueArgs amqp091.Table) *dest {
	t.Helper()
	name := uniqueName(t)
	d := &dest{conn: adminConn(t), exchange: name, queue: name, key: testKey, queueArgs: queueArgs}
	d.declare(t)
	return d
}

// newSink makes a sink publishing to d through url, connected.
func newSink(t *testing.T, url string, d *dest, maxSize int64) *Sink {
	t.Helper()
	return newSinkWith(t, url, d, func(c *Config) { c.MaxMessageSize = maxSize })
}

// newSinkWith is newSink with the test's changes to its Config.
func newSinkWith(t *testing.T, url string, d *dest, change func(*Config)) *Sink {
	t.Helper()
	cfg := Config{
		URL:          url,
		Exchange:     d.exchange,
		RoutingKey:   d.key,
		ReconnectMin: 20 * time.Millisecond,
		ReconnectMax: 200 * time.Millisecond,
		Name:         t.Name(),
	}
	change(&cfg)
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("new sink: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	waitConnected(t, s)
	return s
}

func waitConnected(t *testing.T, s *Sink) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitConnected(ctx); err != nil {
		t.Fatalf("sink never connected to %s: %v", s.endpoint, err)
	}
}

func publish(t *testing.T, s *Sink, msgs []sinks.Message) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return s.Publish(ctx, msgs)
}

// consumer reads d's queue on the admin connection.
type consumer struct {
	deliveries <-chan amqp091.Delivery
}

func (d *dest) consume(t *testing.T) *consumer {
	t.Helper()
	ch := channel(t, d.conn)
	t.Cleanup(func() { _ = ch.Close() })
	deliveries, err := ch.Consume(d.queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatalf("consume %s: %v", d.queue, err)
	}
	return &consumer{deliveries: deliveries}
}

// next returns the next n deliveries, failing t if they do not come in time.
func (c *consumer) next(t *testing.T, n int, timeout time.Duration) []amqp091.Delivery {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	out := make([]amqp091.Delivery, 0, n)
	for len(out) < n {
		select {
		case d, ok := <-c.deliveries:
			if !ok {
				t.Fatalf("consumer closed after %d of %d messages", len(out), n)
			}
			out = append(out, d)
		case <-deadline.C:
			t.Fatalf("received %d of %d messages within %v", len(out), n, timeout)
		}
	}
	return out
}

// quiet fails t if a message arrives within d.
func (c *consumer) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case m := <-c.deliveries:
		t.Fatalf("unexpected message %s (%q)", m.MessageId, m.Body)
	case <-time.After(d):
	}
}

func (c *consumer) read(t *testing.T, n int, timeout time.Duration) []sinktest.Received {
	t.Helper()
	ds := c.next(t, n, timeout)
	out := make([]sinktest.Received, len(ds))
	for i, d := range ds {
		out[i] = received(d)
	}
	return out
}

// received is d as the conformance suite sees it.
func received(d amqp091.Delivery) sinktest.Received {
	r := sinktest.Received{
		Body:       d.Body,
		ID:         d.MessageId,
		Headers:    make(map[string]string, len(d.Headers)),
		RoutingKey: d.RoutingKey,
	}
	for k, v := range d.Headers {
		r.Headers[k] = fmt.Sprint(v)
	}
	r.Topic = r.Headers[sinks.HeaderTopic]
	r.Due, _ = strconv.ParseInt(r.Headers[sinks.HeaderDue], 10, 64)
	r.Attempt, _ = strconv.Atoi(r.Headers[sinks.HeaderAttempt])
	return r
}
