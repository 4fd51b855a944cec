package forwarder

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks/amqp"
)

// BenchmarkBurstThroughRabbitMQ forwards a burst of messages due at the
// same millisecond in 8 slots through the real AMQP sink to the local
// RabbitMQ, with a consumer attached, and reports messages per second. It is
// there to be profiled:
//
//	go test -run '^$' -bench BurstThroughRabbitMQ -benchtime 1x -cpuprofile cpu.out ./forwarder
//
// The whole bench (bench/, make bench) measures the daemon as a process.
func BenchmarkBurstThroughRabbitMQ(b *testing.B) {
	const n, slots = 50_000, 8
	amqpURL := os.Getenv("DELAYBRIDGE_TEST_AMQP_URL")
	if amqpURL == "" {
		amqpURL = "amqp://guest:guest@127.0.0.1:5672/"
	}
	redisURL := os.Getenv("DELAYBRIDGE_TEST_REDIS_URL")
	if redisURL == "" {
		redisURL = "redis://127.0.0.1:6379/0"
	}
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		b.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		b.Fatalf("redis at %s is required: %v", redisURL, err)
	}
	id := make([]byte, 4)
	rand.Read(id)
	name := "perf-burst-" + hex.EncodeToString(id)
	defer func() {
		keys, _ := rdb.Keys(ctx, name+"*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
	}()

	// The consumer's goroutines carry the label role=consumer, so a
	// profile can leave them out: -tagignore role=consumer.
	var conn *amqp091.Connection
	pprof.Do(ctx, pprof.Labels("role", "consumer"), func(context.Context) {
		conn, err = amqp091.Dial(amqpURL)
	})
	if err != nil {
		b.Fatalf("rabbitmq at %s is required: %v", amqpURL, err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.ExchangeDeclare(name, "direct", true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	defer ch.ExchangeDelete(name, false, false)
	if _, err := ch.QueueDeclare(name, true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	defer ch.QueueDelete(name, false, false, false)
	if err := ch.QueueBind(name, "k", name, false, nil); err != nil {
		b.Fatal(err)
	}
	deliveries, err := ch.Consume(name, "", true, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	var got atomic.Int64
	consumed := make(chan struct{})
	pprof.Do(ctx, pprof.Labels("role", "consumer"), func(context.Context) {
		go func() {
			defer close(consumed)
			for range deliveries {
				got.Add(1)
			}
		}()
	})
	defer func() { ch.Close(); <-consumed }()

	sink, err := amqp.New(amqp.Config{URL: amqpURL, Exchange: name, RoutingKey: "k"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sink.WaitConnected(wctx); err != nil {
		b.Fatal(err)
	}

	q := queue.New(rdb)
	topic := queue.Topic{Name: "perf", Prefix: name, Slots: slots}
	due := time.Now().Add(1500 * time.Millisecond).Truncate(time.Millisecond)
	pipe := rdb.Pipeline()
	for i := range n {
		m := fmt.Sprintf("message %08d %s", i, "padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding")
		pipe.ZAdd(ctx, topic.Keys(queue.Slot([]byte(m), slots)).Scheduled, redis.Z{Score: float64(due.UnixMilli()), Member: m})
		if pipe.Len() >= 1000 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}

	stop := startFor(b, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: name, AllSlots: true, Metrics: NewMetrics(prometheus.NewRegistry())})
	defer stop()
	time.Sleep(time.Until(due))
	b.ResetTimer()
	deadline := time.Now().Add(2 * time.Minute)
	for got.Load() < n {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d consumed", got.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/time.Since(due).Seconds(), "msgs/s")
}

// startFor runs a forwarder until stop.
func startFor(tb testing.TB, opt Options) (stop func()) {
	f, err := New(opt)
	if err != nil {
		tb.Fatalf("new forwarder: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("run: %v", err)
		}
	}
}
