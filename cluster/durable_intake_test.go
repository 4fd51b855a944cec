package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/intake"
	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// amqpIntake is an AMQP intake of a queue of its own (deleted at cleanup)
// into a topic, writing through the durable queue the other producers use,
// and the test's channel to that queue.
type amqpIntake struct {
	queue string
	conn  *amqp.Connection
	ch    *amqp.Channel
	m     *intake.Metrics
	stop  func() // stops the intake and waits for it; its unacked deliveries go back to the queue
}

// startAMQPIntake declares the intake's queue and runs the intake of it
// into tp over q until stop or the test's end.
func startAMQPIntake(t *testing.T, q *queue.Queue, tp queue.Topic) *amqpIntake {
	t.Helper()
	conn, err := amqp.Dial(e2etest.AMQPURL())
	if err != nil {
		t.Fatalf("rabbitmq at %s is required: %v", e2etest.AMQPURL(), err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	a := &amqpIntake{queue: "dur-intake-" + e2etest.Unique(t), conn: conn, ch: ch, m: intake.NewMetrics(prometheus.NewRegistry())}
	if _, err := ch.QueueDeclare(a.queue, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	in, err := intake.NewAMQP(intake.AMQPConfig{URL: e2etest.AMQPURL(), Queue: a.queue, Prefetch: 64, LagInterval: time.Second},
		intake.Target{Topic: tp}, q, a.m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = in.Run(ctx) }()
	var once sync.Once
	a.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(func() {
		a.stop()
		_, _ = ch.QueueDelete(a.queue, false, false, false)
		_ = conn.Close()
	})
	return a
}

// produce publishes x-delay messages (an hour) to the intake's queue, 20
// every 25 ms, with publisher confirms, until ctx ends, and calls confirmed
// with the id of each one RabbitMQ confirmed: the producer's
// acknowledgement.
func (a *amqpIntake) produce(ctx context.Context, t *testing.T, confirmed func(id string)) {
	ch, err := a.conn.Channel()
	if err != nil {
		t.Errorf("producer channel: %v", err)
		return
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Errorf("confirm mode: %v", err)
		return
	}
	for b := 0; ctx.Err() == nil; b++ {
		ids := make([]string, 0, 20)
		dcs := make([]*amqp.DeferredConfirmation, 0, 20)
		for i := range 20 {
			id := fmt.Sprintf("amqp-b%d-%d", b, i)
			dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", a.queue, false, false,
				amqp.Publishing{MessageId: id, Headers: amqp.Table{"x-delay": int32(3600000)}, Body: []byte("x")})
			if err != nil {
				break
			}
			ids, dcs = append(ids, id), append(dcs, dc)
		}
		for i, dc := range dcs {
			if ok, err := dc.WaitContext(ctx); err == nil && ok {
				confirmed(ids[i])
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// counts is how many deliveries the intake took (redeliveries of what it
// nacked included) and how many it scheduled and acked.
func (a *amqpIntake) counts(tp queue.Topic) (received, scheduled int) {
	return int(testutil.ToFloat64(a.m.Received.WithLabelValues(tp.Name))), int(testutil.ToFloat64(a.m.Scheduled.WithLabelValues(tp.Name)))
}

// drain waits (within) until the intake has taken every ready message,
// stops it, and returns the ids of the messages still in its queue (the
// deliveries it held unacknowledged when stopped), taking them out.
func (a *amqpIntake) drain(t *testing.T, within time.Duration) map[string]bool {
	t.Helper()
	e2etest.WaitFor(t, within, "the intake to take every message left in its queue", func() bool {
		info, err := a.ch.QueueDeclarePassive(a.queue, false, false, false, false, nil)
		return err == nil && info.Messages == 0
	})
	a.stop()
	left := map[string]bool{}
	for {
		d, ok, err := a.ch.Get(a.queue, true)
		if err != nil {
			t.Fatalf("get from %s: %v", a.queue, err)
		}
		if !ok {
			return left
		}
		left[d.MessageId] = true
	}
}

// attachReplica starts a replica of addr (the promoted master), so that
// WAIT N (N ≥ 1) is confirmed there again and acceptance resumes, and
// waits until the master counts it online.
func attachReplica(t *testing.T, addr string) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	e2etest.StartRedisServer(t, "new replica", redis.Options{}, func(p int, dir string) []string {
		return []string{"--port", strconv.Itoa(p), "--dir", dir, "--replicaof", host, port,
			"--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}
	})
	m := redis.NewClient(&redis.Options{Addr: addr})
	defer m.Close()
	e2etest.WaitFor(t, 20*time.Second, "the promoted master to count its new replica online", func() bool {
		info, err := m.Info(t.Context(), "replication").Result()
		return err == nil && strings.Contains(info, "connected_slaves:1") && strings.Contains(info, ",state=online,")
	})
}
