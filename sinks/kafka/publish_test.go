package kafka

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/delaybridge/delaybridge/sinks"
)

func TestPublishRoundTripsKeysAndHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode    string
		wantKey func(m sinks.Message) []byte
	}{
		{KeyNone, func(sinks.Message) []byte { return nil }},
		{KeyID, func(m sinks.Message) []byte { return []byte(m.ID) }},
		{KeyEnvelope, func(m sinks.Message) []byte {
			if m.RoutingKey != "" {
				return []byte(m.RoutingKey)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			topic := uniqueTopic(t)
			c := newCluster(t, topic, 3)
			s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, KeyMode: tt.mode})
			msgs := messages(tt.mode, 30)
			for i := range msgs {
				msgs[i].Headers = map[string]string{"x-app": "n" + strconv.Itoa(i), sinks.HeaderID: "forged"}
				switch i % 3 {
				case 0:
					msgs[i].RoutingKey = "k" + strconv.Itoa(i%5)
				case 1:
					msgs[i].RoutingKey = "rk" + strconv.Itoa(i%4)
				}
			}
			if err := publish(t, s, msgs); err != nil {
				t.Fatalf("publish: %v", err)
			}

			recs := newConsumer(t, addr(c), topic).read(t, len(msgs), 30*time.Second)
			byID := make(map[string]int, len(msgs))
			for i, m := range msgs {
				byID[m.ID] = i
			}
			partitionOfKey := map[string]int32{}
			for _, r := range recs {
				h := headers(r)
				i, ok := byID[h[sinks.HeaderID]]
				if !ok {
					t.Fatalf("record with unknown id %q (headers %v)", h[sinks.HeaderID], h)
				}
				delete(byID, h[sinks.HeaderID])
				m := msgs[i]
				if !bytes.Equal(r.Value, m.Body) {
					t.Errorf("%s: value %q, want %q", m.ID, r.Value, m.Body)
				}
				if want := tt.wantKey(m); !bytes.Equal(r.Key, want) || (want == nil) != (r.Key == nil) {
					t.Errorf("%s: key %q, want %q", m.ID, r.Key, want)
				}
				want := map[string]string{
					sinks.HeaderID:      m.ID,
					sinks.HeaderTopic:   m.Topic,
					sinks.HeaderDue:     strconv.FormatInt(m.Due.UnixMilli(), 10),
					sinks.HeaderAttempt: strconv.Itoa(m.Attempt),
					"x-app":             "n" + strconv.Itoa(i),
				}
				if diff := cmp.Diff(want, h); diff != "" {
					t.Errorf("%s: headers (-want +got):\n%s", m.ID, diff)
				}
				if r.Key != nil {
					// A key always lands in the same partition.
					if p, seen := partitionOfKey[string(r.Key)]; seen && p != r.Partition {
						t.Errorf("key %q in partitions %d and %d", r.Key, p, r.Partition)
					}
					partitionOfKey[string(r.Key)] = r.Partition
				}
			}
			if len(byID) != 0 {
				t.Errorf("%d messages not read", len(byID))
			}
		})
	}
}

func TestPublishKeepsOrderWithinPartition(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, BatchSize: 7})
	var want []string
	for b := range 4 {
		msgs := messages("b"+strconv.Itoa(b), 25) // more than BatchSize: several produce requests
		for _, m := range msgs {
			want = append(want, m.ID)
		}
		if err := publish(t, s, msgs); err != nil {
			t.Fatalf("publish batch %d: %v", b, err)
		}
	}
	recs := newConsumer(t, addr(c), topic).read(t, len(want), 30*time.Second)
	got := make([]string, len(recs))
	for i, r := range recs {
		got[i] = recordID(r)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestPublishCompressed(t *testing.T) {
	t.Parallel()
	for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			t.Parallel()
			topic := uniqueTopic(t)
			c := newCluster(t, topic, 1)
			s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, Compression: codec})
			msgs := messages(codec, 10)
			msgs[3].Body = bytes.Repeat([]byte("compressible "), 1000)
			if err := publish(t, s, msgs); err != nil {
				t.Fatalf("publish: %v", err)
			}
			recs := newConsumer(t, addr(c), topic).read(t, len(msgs), 30*time.Second)
			for i, r := range recs {
				if !bytes.Equal(r.Value, msgs[i].Body) {
					t.Errorf("record %d: value %.40q, want %.40q", i, r.Value, msgs[i].Body)
				}
			}
		})
	}
}

// Without a key, the records of one Publish go to one partition (one
// produce request), and successive Publish calls take the partitions in
// turn; with a key, each record goes where the Java client would put it.
func TestPublishPartitionsByCallWithoutKeyAndByKeyWithOne(t *testing.T) {
	t.Parallel()
	const partitions = 3
	for _, mode := range []string{KeyNone, KeyID} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			topic := uniqueTopic(t)
			c := newCluster(t, topic, partitions)
			s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, KeyMode: mode})
			call := map[string]int{} // message id → its Publish
			for b := range partitions {
				msgs := messages("p"+strconv.Itoa(b), 12)
				for _, m := range msgs {
					call[m.ID] = b
				}
				if err := publish(t, s, msgs); err != nil {
					t.Fatalf("publish %d: %v", b, err)
				}
			}
			recs := newConsumer(t, addr(c), topic).read(t, len(call), 30*time.Second)
			parts := map[int]map[int32]bool{} // Publish → partitions it used
			for _, r := range recs {
				b := call[recordID(r)]
				if parts[b] == nil {
					parts[b] = map[int32]bool{}
				}
				parts[b][r.Partition] = true
				if mode == KeyID {
					want := int32(kafkago.Murmur2Balancer{}.Balance(kafkago.Message{Key: r.Key}, 0, 1, 2))
					if r.Partition != want {
						t.Errorf("record %s in partition %d, want murmur2's %d", recordID(r), r.Partition, want)
					}
				}
			}
			if mode != KeyNone {
				return
			}
			used := map[int32]bool{}
			for b, ps := range parts {
				if len(ps) != 1 {
					t.Errorf("publish %d spread over partitions %v, want one", b, ps)
				}
				for p := range ps {
					used[p] = true
				}
			}
			if len(used) != partitions {
				t.Errorf("%d publishes used partitions %v, want each of the %d in turn", partitions, used, partitions)
			}
		})
	}
}

// By default a message's own key is the record key, byte for byte (binary,
// with a 0 byte, empty: not null), and each keyed record is on the
// partition the Java client's default partitioner picks for its key (franz-go's
// murmur2 here, another implementation than the sink's); the records without
// a key of one Publish share one partition.
func TestPublishByDefaultKeepsEachMessagesOwnKeyByteForByteOnItsMurmur2Partition(t *testing.T) {
	t.Parallel()
	const partitions = 5
	topic := uniqueTopic(t)
	c := newCluster(t, topic, partitions)
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic})
	keys := []*string{nil, ptr("user-42"), ptr("\x00"), ptr("a\x00b"), ptr("\xff\xfe\x00\x01"), ptr(""), nil, ptr(strings.Repeat("k", 300)), nil}
	msgs := messages("own", len(keys))
	want := map[string][]byte{}
	for i, k := range keys {
		if k != nil {
			msgs[i].RoutingKey, msgs[i].EmptyKey = *k, *k == ""
			want[msgs[i].ID] = []byte(*k)
		}
	}
	if err := publish(t, s, msgs); err != nil {
		t.Fatalf("publish: %v", err)
	}
	java := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
	unkeyed := map[int32]bool{}
	for _, r := range newConsumer(t, addr(c), topic).read(t, len(msgs), 30*time.Second) {
		key, keyed := want[recordID(r)]
		switch {
		case !keyed:
			if r.Key != nil {
				t.Errorf("%s: key %q, want null", recordID(r), r.Key)
			}
			unkeyed[r.Partition] = true
			continue
		case r.Key == nil || !bytes.Equal(r.Key, key):
			t.Errorf("%s: key %q (null %v), want %q", recordID(r), r.Key, r.Key == nil, key)
		}
		if p := int32(java.Partition(&kgo.Record{Key: key}, partitions)); r.Partition != p {
			t.Errorf("%s: key %q on partition %d, want %d (murmur2)", recordID(r), key, r.Partition, p)
		}
	}
	if len(unkeyed) != 1 {
		t.Errorf("records without a key of one Publish on partitions %v, want one", unkeyed)
	}
}

func ptr(s string) *string { return &s }
