package forwarder

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
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
	rig := newPerfRig(b, slots)
	due := time.Now().Add(1500 * time.Millisecond).Truncate(time.Millisecond)
	pipe := rig.rdb.Pipeline()
	for i := range n {
		rig.add(pipe, i, due)
		if pipe.Len() >= 1000 {
			if _, err := pipe.Exec(rig.ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(rig.ctx); err != nil {
		b.Fatal(err)
	}
	rig.start(b)
	time.Sleep(time.Until(due))
	b.ResetTimer()
	cpu := startCPU()
	rig.waitFor(b, n)
	b.StopTimer()
	b.ReportMetric(float64(n)/time.Since(due).Seconds(), "msgs/s")
	b.ReportMetric(float64(cpu().Microseconds())/n, "cpu-µs/msg")
}

// startCPU returns a function that tells the CPU time this process used
// since (the consumer's included).
func startCPU() func() time.Duration {
	var before syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	return func() time.Duration {
		var after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		return time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	}
}

// BenchmarkSteadyThroughRabbitMQ forwards 2,000 messages/s falling due
// evenly for 10 s in 8 slots, written 1.5 s ahead, and reports the CPU the
// test process used per message (the forwarder, the sink and the consumer,
// which -tagignore role=consumer leaves out of a profile).
func BenchmarkSteadyThroughRabbitMQ(b *testing.B) {
	const rate, seconds, slots = 2000, 10, 8
	const n = rate * seconds
	rig := newPerfRig(b, slots)
	rig.start(b)
	t0 := time.Now().Add(1600 * time.Millisecond).Truncate(time.Millisecond)
	dueOf := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second / rate) }
	b.ResetTimer()
	cpu := startCPU()
	next := 0
	for next < n {
		pipe := rig.rdb.Pipeline()
		for horizon := time.Now().Add(1500 * time.Millisecond); next < n && !dueOf(next).After(horizon); next++ {
			rig.add(pipe, next, dueOf(next))
		}
		if _, err := pipe.Exec(rig.ctx); err != nil && err != redis.Nil {
			b.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rig.waitFor(b, n)
	b.StopTimer()
	b.ReportMetric(float64(cpu().Microseconds())/n, "cpu-µs/msg")
}

// perfRig is Redis, a RabbitMQ exchange and queue with a consumer, and an
// AMQP sink, for the benchmarks.
type perfRig struct {
	ctx   context.Context
	rdb   *redis.Client
	topic queue.Topic
	sink  *amqp.Sink
	got   atomic.Int64
	slots int
}

func newPerfRig(b *testing.B, slots int) *perfRig {
	amqpURL := os.Getenv("DELAYBRIDGE_TEST_AMQP_URL")
	if amqpURL == "" {
		amqpURL = "amqp://guest:guest@127.0.0.1:5672/"
	}
	ctx := context.Background()
	rig := &perfRig{ctx: ctx, rdb: redistest.Connect(b), slots: slots}
	name := redistest.Prefix(b, rig.rdb)
	rig.topic = queue.Topic{Name: "perf", Prefix: name, Slots: slots}

	// The consumer's goroutines carry the label role=consumer, so a
	// profile can leave them out: -tagignore role=consumer.
	var conn *amqp091.Connection
	var err error
	pprof.Do(ctx, pprof.Labels("role", "consumer"), func(context.Context) {
		conn, err = amqp091.Dial(amqpURL)
	})
	if err != nil {
		b.Fatalf("rabbitmq at %s is required: %v", amqpURL, err)
	}
	b.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.ExchangeDeclare(name, "direct", true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := ch.QueueDeclare(name, true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	if err := ch.QueueBind(name, "k", name, false, nil); err != nil {
		b.Fatal(err)
	}
	deliveries, err := ch.Consume(name, "", true, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	consumed := make(chan struct{})
	pprof.Do(ctx, pprof.Labels("role", "consumer"), func(context.Context) {
		go func() {
			defer close(consumed)
			for range deliveries {
				rig.got.Add(1)
			}
		}()
	})
	b.Cleanup(func() {
		ch.QueueDelete(name, false, false, false)
		ch.ExchangeDelete(name, false, false)
		ch.Close()
		<-consumed
	})

	rig.sink, err = amqp.New(amqp.Config{URL: amqpURL, Exchange: name, RoutingKey: "k"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rig.sink.Close() })
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rig.sink.WaitConnected(wctx); err != nil {
		b.Fatal(err)
	}
	return rig
}

// add schedules message i at due on pipe.
func (rig *perfRig) add(pipe redis.Pipeliner, i int, due time.Time) {
	m := fmt.Sprintf("message %08d %s", i, "padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding")
	pipe.ZAdd(rig.ctx, rig.topic.Keys(queue.Slot([]byte(m), rig.slots)).Scheduled, redis.Z{Score: float64(due.UnixMilli()), Member: m})
}

// start runs a forwarder over the rig until the benchmark ends.
func (rig *perfRig) start(b *testing.B) {
	stop := startFor(b, Options{Queue: queue.New(rig.rdb), Topics: []Topic{{rig.topic, rig.sink}}, KeyPrefix: rig.topic.Prefix, AllSlots: true, Metrics: NewMetrics(prometheus.NewRegistry())})
	b.Cleanup(stop)
}

// waitFor waits until the consumer got n messages.
func (rig *perfRig) waitFor(b *testing.B, n int) {
	deadline := time.Now().Add(2 * time.Minute)
	for rig.got.Load() < int64(n) {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d consumed", rig.got.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
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
