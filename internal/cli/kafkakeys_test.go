package cli

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

// Records taken in from a Kafka topic arrive at the destination topic byte
// for byte by default: text, binary and 0-byte keys, binary values and
// header values; each keyed record on the partition the Java client's
// default partitioner (murmur2, computed here by franz-go) picks for its
// key, so consumers that rely on per-key order keep it. A null key stays
// null. (kafka-go's consumer hands an empty key over as null: it arrives
// null.)
func TestKafkaIntakeToKafkaKeepsKeysValuesAndHeadersByteForByte(t *testing.T) {
	const in, out, partitions = "keys-in", "keys-out", 5
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(3, in), kfake.SeedTopics(partitions, out))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()[0]
	_, prefix := redistest.New(t)
	for k, v := range map[string]string{
		"REDIS_URL": redistest.URL(), "AMQP_URL": "", "KEY_PREFIX": prefix, "KAFKA_BROKERS": brokers,
		"OWNERSHIP": "all", "POLL_INTERVAL": "100ms", "TOPICS": "events",
		"TOPIC_EVENTS_SINK": "kafka", "TOPIC_EVENTS_KAFKA_TOPIC": out, "TOPIC_EVENTS_FORMAT": "envelope",
		"TOPIC_EVENTS_INTAKE": "kafka", "TOPIC_EVENTS_INTAKE_KAFKA_TOPIC": in,
	} {
		t.Setenv("DELAYBRIDGE_"+k, v)
	}

	type rec struct{ key, value, header []byte }
	var sent []rec
	for i := range 40 {
		sent = append(sent, rec{key: fmt.Appendf(nil, "user-%d", i%7), value: fmt.Appendf(nil, "text-%d", i)})
	}
	sent = append(sent,
		rec{key: []byte{0xff, 0x00, 0xfe, 0x80}, value: []byte{0x00, 0xc3, 0x28}, header: []byte{0xde, 0xad, 0x00}},
		rec{key: []byte("a\x00b"), value: []byte("zero-in-key")},
		rec{key: []byte{0x00}, value: []byte("only-zero")},
		rec{key: bytes.Repeat([]byte{0xab}, 300), value: []byte("long-binary-key")},
		rec{key: nil, value: []byte("null-key")},
		rec{key: []byte{}, value: []byte("empty-key")},
	)
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.DefaultProduceTopic(in))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for _, r := range sent {
		kr := &kgo.Record{Key: r.key, Value: r.value, Headers: []kgo.RecordHeader{{Key: "x-delay", Value: []byte("0")}}}
		if r.header != nil {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: "x-bin", Value: r.header})
		}
		if err := prod.ProduceSync(context.Background(), kr).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	d := startDaemon(t)

	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(out), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := map[string]*kgo.Record{}
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < len(sent) && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[string(r.Value)] = r })
		cancel()
	}
	if len(got) != len(sent) {
		t.Fatalf("%d of %d records arrived; logs:\n%s", len(got), len(sent), d.logs.String())
	}
	java := kgo.StickyKeyPartitioner(nil).ForTopic(out)
	for _, s := range sent {
		r := got[string(s.value)]
		wantKey := s.key
		if len(wantKey) == 0 {
			wantKey = nil
		}
		if !bytes.Equal(r.Key, wantKey) || (r.Key == nil) != (wantKey == nil) {
			t.Errorf("record %q: key %q (null %v), want %q (null %v)", s.value, r.Key, r.Key == nil, wantKey, wantKey == nil)
		}
		if s.header != nil && !bytes.Equal(header(r, "x-bin"), s.header) {
			t.Errorf("record %q: header x-bin %q, want %q", s.value, header(r, "x-bin"), s.header)
		}
		if wantKey == nil {
			continue
		}
		if p := int32(java.Partition(&kgo.Record{Key: wantKey}, partitions)); r.Partition != p {
			t.Errorf("record %q with key %q on partition %d, want %d (murmur2)", s.value, wantKey, r.Partition, p)
		}
	}
}

func header(r *kgo.Record, name string) []byte {
	for _, h := range r.Headers {
		if h.Key == name {
			return h.Value
		}
	}
	return nil
}
