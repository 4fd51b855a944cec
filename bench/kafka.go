package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// kafkaPartitions is how many partitions each benchmark topic has.
const kafkaPartitions = 8

var devkafkaReady = regexp.MustCompile(`^devkafka ready addr=(\S+)`)

// devkafka is a running bin/devkafka.
type devkafka struct {
	cmd  *exec.Cmd
	addr string
	done chan error
}

// startDevkafka runs bin/devkafka on a free port with topics.
func startDevkafka(ctx context.Context, bin string, topics ...string) (*devkafka, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("devkafka binary: %w (run make build)", err)
	}
	cmd := exec.Command(abs, "-addr", "127.0.0.1:0", "-topics", strings.Join(topics, ","), "-partitions", fmt.Sprint(kafkaPartitions))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start devkafka: %w", err)
	}
	k := &devkafka{cmd: cmd, done: make(chan error, 1)}
	addrs := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := devkafkaReady.FindStringSubmatch(sc.Text()); m != nil {
				addrs <- m[1]
			}
		}
		k.done <- cmd.Wait()
	}()
	select {
	case k.addr = <-addrs:
		return k, nil
	case err := <-k.done:
		return nil, fmt.Errorf("devkafka exited before it was ready: %v", err)
	case <-time.After(30 * time.Second):
		k.stop()
		return nil, fmt.Errorf("devkafka not ready within 30 s")
	case <-ctx.Done():
		k.stop()
		return nil, ctx.Err()
	}
}

func (k *devkafka) stop() {
	k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(10 * time.Second):
		k.cmd.Process.Kill()
		<-k.done
	}
}

// consumeKafka reads every partition of topic from the start with franz-go
// and records each record in tr until stop is called.
func consumeKafka(addr, topic string, tr *tracker, opts ...kgo.Opt) (stop func(), err error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond),
	}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka consumer: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			now := time.Now().UnixNano()
			fs.EachRecord(func(r *kgo.Record) { tr.got(r.Value, now) })
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			cl.Close()
		})
	}, nil
}

// rawKafka measures kafka-go's own rate to devkafka: n records of the
// benchmark's size and headers written with RequireAll in batches of batch
// by writers goroutines (as the daemon's scanners would), nothing else in
// between. It returns records per second.
func rawKafka(ctx context.Context, addr, topic string, n, size, writers, batch int) (float64, error) {
	w := &kafkago.Writer{
		Addr:         kafkago.TCP(addr),
		Topic:        topic,
		Balancer:     &kafkago.RoundRobin{},
		RequiredAcks: kafkago.RequireAll,
		BatchSize:    batch,
		BatchTimeout: time.Millisecond,
		MaxAttempts:  2,
	}
	defer w.Close()
	now := time.Now()
	records := make([]kafkago.Message, n)
	for i := range records {
		b := body(i, now.UnixMilli(), size)
		m := sinks.Message{ID: queue.MessageID(b), Topic: "bench", Due: now, Attempt: 1}
		records[i] = kafkago.Message{Value: b, Headers: []kafkago.Header{
			{Key: sinks.HeaderID, Value: []byte(m.ID)},
			{Key: sinks.HeaderTopic, Value: []byte(m.Topic)},
			{Key: sinks.HeaderDue, Value: []byte(m.DueHeader())},
			{Key: sinks.HeaderAttempt, Value: []byte("1")},
		}}
	}
	// Warm the metadata and connections outside the measurement.
	if err := w.WriteMessages(ctx, records[0]); err != nil {
		return 0, fmt.Errorf("raw kafka-go warm-up: %w", err)
	}
	records = records[1:]
	var wg sync.WaitGroup
	errs := make([]error, writers)
	start := time.Now()
	for g := range writers {
		wg.Go(func() {
			for i := g * batch; i < len(records); i += writers * batch {
				if err := w.WriteMessages(ctx, records[i:min(i+batch, len(records))]...); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return 0, fmt.Errorf("raw kafka-go: %w", err)
		}
	}
	return perSecond(float64(len(records)), elapsed), nil
}

// runKafkaBurst: burst through the Kafka sink to devkafka, against the lower
// of kafka-go's and Redis's raw rates measured alone in the same run.
func runKafkaBurst(ctx context.Context, e *env) (Scenario, error) {
	n, slots := e.o.sizes.kafkaBurst, e.o.sizes.burstSlots
	r := Scenario{Messages: n, Ceilings: map[string]float64{}}
	prefix := e.prefix("kafka-burst")
	defer e.dropKeys(prefix)
	topic, rawTopic := prefix, prefix+"-raw"
	k, err := startDevkafka(ctx, e.o.devkafka, topic, rawTopic)
	if err != nil {
		return r, err
	}
	defer k.stop()
	e.devkafka = k
	defer func() { e.devkafka = nil }()

	kafkaRate, err := rawKafka(ctx, k.addr, rawTopic, n, e.o.size, slots, 500)
	if err != nil {
		return r, err
	}
	fmt.Fprintf(os.Stderr, "   raw kafka-go: %.0f msg/s\n", kafkaRate)
	redisRate, err := e.rawClaimAck(ctx, n, slots, 500, e.o.size)
	if err != nil {
		return r, err
	}
	fmt.Fprintf(os.Stderr, "   raw redis claim+ack: %.0f msg/s\n", redisRate)
	r.Ceilings["kafka_go"] = kafkaRate
	r.Ceilings["redis_claim_ack"] = redisRate
	r.Ceiling = min(kafkaRate, redisRate)

	vars := map[string]string{
		"DELAYBRIDGE_KEY_PREFIX":              prefix,
		"DELAYBRIDGE_TOPICS":                  "bench",
		"DELAYBRIDGE_TOPIC_BENCH_SINK":        "kafka",
		"DELAYBRIDGE_TOPIC_BENCH_SLOTS":       fmt.Sprint(slots),
		"DELAYBRIDGE_TOPIC_BENCH_KAFKA_TOPIC": topic,
		"DELAYBRIDGE_KAFKA_BROKERS":           k.addr,
	}
	if err := e.burstThroughDaemon(ctx, &r, prefix, vars, slots, n, 0, func(tr *tracker) (func(), error) {
		return consumeKafka(k.addr, topic, tr)
	}); err != nil {
		return r, err
	}
	r.Ratio = ratio(r.Throughput, r.Ceiling)
	r.costs(n)
	r.target("throughput / min(raw kafka-go, raw Redis claim+ack)", r.Ratio, ">=", 0.8, "", fmt.Sprintf("%.0f vs %.0f msg/s", r.Throughput, r.Ceiling))
	r.checkAlways()
	return r, nil
}
