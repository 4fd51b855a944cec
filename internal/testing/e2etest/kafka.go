package e2etest

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/delaybridge/delaybridge/sinks"
)

// Kafka consumes one topic from its start and records every record.
type Kafka struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	received
}

// ConsumeKafka consumes topic from the brokers at seeds until cleanup. dial,
// when not nil, dials for the consumer: a test that advertises a fault
// proxy's address for the daemon can send its own consumer around the proxy.
func ConsumeKafka(tb testing.TB, seeds []string, topic string, dial func(ctx context.Context, network, host string) (net.Conn, error)) *Kafka {
	tb.Helper()
	var opts []kgo.Opt
	if dial != nil {
		opts = append(opts, kgo.Dialer(dial))
	}
	return consumeKafka(tb, seeds, topic, opts...)
}

// ConsumeKafkaGroup consumes topic from its start as a member of the
// consumer group group, the way applications read what the daemon
// publishes, until cleanup.
func ConsumeKafkaGroup(tb testing.TB, seeds []string, topic, group string) *Kafka {
	tb.Helper()
	return consumeKafka(tb, seeds, topic, kgo.ConsumerGroup(group))
}

func consumeKafka(tb testing.TB, seeds []string, topic string, extra ...kgo.Opt) *Kafka {
	tb.Helper()
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		tb.Fatalf("kafka consumer for %v: %v", seeds, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &Kafka{cl: cl, cancel: cancel, done: make(chan struct{})}
	go k.poll(ctx)
	tb.Cleanup(func() {
		cancel()
		<-k.done
		cl.Close()
	})
	return k
}

func (k *Kafka) poll(ctx context.Context) {
	defer close(k.done)
	for ctx.Err() == nil {
		fs := k.cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			d := Delivery{Body: r.Value, Key: string(r.Key), At: r.Timestamp, Headers: make(map[string]string, len(r.Headers))}
			for _, h := range r.Headers {
				d.Headers[h.Key] = string(h.Value)
				switch h.Key {
				case sinks.HeaderID:
					d.ID = string(h.Value)
				case sinks.HeaderDue:
					d.Due, _ = strconv.ParseInt(string(h.Value), 10, 64)
				case sinks.HeaderAttempt:
					d.Attempt, _ = strconv.ParseInt(string(h.Value), 10, 64)
				}
			}
			k.add(d)
		})
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) {
				time.Sleep(50 * time.Millisecond) // the client retries by itself
			}
		})
	}
}
