package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/delaybridge/delaybridge/sinks"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newCluster starts a kfake cluster on a free loopback port (real Kafka wire
// protocol over TCP) with topic seeded, closed when the test ends.
func newCluster(t *testing.T, topic string, partitions int32, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	opts = append([]kfake.Opt{kfake.Ports(0), kfake.SeedTopics(partitions, topic)}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("start kfake cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func addr(c *kfake.Cluster) string { return c.ListenAddrs()[0] }

// uniqueTopic is a topic name of its own for the test.
func uniqueTopic(t *testing.T) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("t-%s", hex.EncodeToString(b))
}

// newSink returns a sink for cfg that is closed when the test ends.
func newSink(t *testing.T, cfg Config) *Sink {
	t.Helper()
	s, err := New(cfg, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatalf("new sink: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close sink: %v", err)
		}
	})
	return s
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// messages makes n messages with distinct ids, bodies and fields.
func messages(prefix string, n int) []sinks.Message {
	due := time.UnixMilli(1_764_000_000_000)
	msgs := make([]sinks.Message, n)
	for i := range msgs {
		msgs[i] = sinks.Message{
			ID:      fmt.Sprintf("%s-%05d", prefix, i),
			Topic:   "orders",
			Body:    fmt.Appendf(nil, `{"n":%d}`, i),
			Due:     due.Add(time.Duration(i) * time.Second),
			Attempt: 1 + i%3,
		}
	}
	return msgs
}

func publish(t *testing.T, s *Sink, msgs []sinks.Message) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.Publish(ctx, msgs)
}

// consumer reads a topic from its start over every partition.
type consumer struct {
	cl *kgo.Client
}

func newConsumer(t *testing.T, brokers, topic string) *consumer {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("new consumer of %s: %v", topic, err)
	}
	t.Cleanup(cl.Close)
	return &consumer{cl: cl}
}

// read returns records until it has n, failing the test after timeout.
func (c *consumer) read(t *testing.T, n int, timeout time.Duration) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		fetches := c.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records within %v", len(recs), n, timeout)
		}
		fetches.EachError(func(topic string, p int32, err error) {
			t.Logf("fetch %s/%d: %v", topic, p, err)
		})
		recs = append(recs, fetches.Records()...)
	}
	return recs
}

// drain returns the records that arrive until none came for quiet.
func (c *consumer) drain(quiet time.Duration) []*kgo.Record {
	var recs []*kgo.Record
	for {
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		fetches := c.cl.PollFetches(ctx)
		cancel()
		got := fetches.Records()
		if len(got) == 0 {
			return recs
		}
		recs = append(recs, got...)
	}
}

func headers(r *kgo.Record) map[string]string {
	h := make(map[string]string, len(r.Headers))
	for _, kv := range r.Headers {
		h[kv.Key] = string(kv.Value)
	}
	return h
}

func recordID(r *kgo.Record) string { return headers(r)[sinks.HeaderID] }

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return n
}

func newClusterB(b *testing.B, topic string) *kfake.Cluster {
	b.Helper()
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(1, topic))
	if err != nil {
		b.Fatalf("start kfake cluster: %v", err)
	}
	b.Cleanup(c.Close)
	return c
}
