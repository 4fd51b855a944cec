package chaos

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// kafkaIntake is the Kafka topic a scenario's intake consumes, on a broker
// of its own: a producer, and a watch on what the consumer group fetches
// and commits.
type kafkaIntake struct {
	name       string
	partitions int32
	broker     *kafkaBroker
	cl         *kgo.Client // the test's own: produces and asks, around the proxy
	watch      *groupWatch
}

// newKafkaIntake runs a broker with topic name of partitions partitions,
// watched from its start; everything goes at cleanup.
func newKafkaIntake(t *testing.T, name string, partitions int32) *kafkaIntake {
	t.Helper()
	k := &kafkaIntake{name: name, partitions: partitions, broker: newKafkaBroker(t, name, partitions)}
	k.watch = newGroupWatch(k.broker, name)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(k.broker.real),
		kgo.Dialer(k.broker.dialAround),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// Kafka 3.7's protocol names topics in offset requests; later
		// versions name them by id.
		kgo.MaxVersions(kversion.V3_7_0()),
	)
	if err != nil {
		t.Fatalf("kafka client for %s: %v", k.broker.real, err)
	}
	t.Cleanup(cl.Close)
	k.cl = cl
	return k
}

// record is where and when a produced record went.
type record struct {
	at        time.Time // its timestamp, which x-delay counts from
	partition int32
	offset    int64
}

// produce writes records 0…n-1 evenly over about over, round robin over
// partitions, as a producer of delayed records would: header
// x-delaybridge-id msg-<i>, header x-delay, body e2etest.Body(i), and a
// timestamp the test sets (a whole millisecond, as Kafka keeps it), so it
// knows each record's due time exactly. It waits for the broker's acks
// every 50 records.
func (k *kafkaIntake) produce(n int, over time.Duration, delay func(i int) time.Duration) ([]record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), over+30*time.Second)
	defer cancel()
	const chunk = 50
	out := make([]record, n)
	start := time.Now()
	for from := 0; from < n; from += chunk {
		until(start.Add(over * time.Duration(from) / time.Duration(n)))
		var rs []*kgo.Record
		for i := from; i < min(from+chunk, n); i++ {
			rs = append(rs, &kgo.Record{
				Topic:     k.name,
				Partition: int32(i) % k.partitions,
				Timestamp: time.Now().Truncate(time.Millisecond),
				Value:     []byte(e2etest.Body(i)),
				Headers: []kgo.RecordHeader{
					{Key: "x-delaybridge-id", Value: []byte("msg-" + strconv.Itoa(i))},
					{Key: "x-delay", Value: []byte(strconv.FormatInt(delay(i).Milliseconds(), 10))},
				},
			})
		}
		if err := k.cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			return nil, fmt.Errorf("produce records %d…%d: %w", from, from+len(rs)-1, err)
		}
		for j, r := range rs {
			out[from+j] = record{at: r.Timestamp, partition: r.Partition, offset: r.Offset}
		}
	}
	return out, nil
}

// waitStable waits until group is stable with members members.
func (k *kafkaIntake) waitStable(t *testing.T, group string, members int) {
	t.Helper()
	e2etest.WaitFor(t, 60*time.Second, fmt.Sprintf("consumer group %s stable with %d members", group, members), func() bool {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(context.Background(), k.cl)
		if err != nil || len(resp.Groups) != 1 {
			return false
		}
		g := resp.Groups[0]
		return g.State == "Stable" && len(g.Members) == members
	})
}

// offsets are group's committed offsets on the topic and the topic's end
// offsets, by partition (a partition without a commit is missing).
func (k *kafkaIntake) offsets(t *testing.T, group string) (committed, end map[int32]int64) {
	t.Helper()
	ctx := context.Background()
	var all []int32
	for p := range k.partitions {
		all = append(all, p)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = group
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: k.name, Partitions: all}}
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: k.name, Partitions: all}}}}
	fresp, err := fetch.RequestWith(ctx, k.cl)
	if err != nil {
		t.Fatalf("committed offsets of %s: %v", group, err)
	}
	committed = map[int32]int64{}
	add := func(topic string, partition int32, offset int64, code int16) {
		if err := kerr.ErrorForCode(code); err != nil {
			t.Fatalf("committed offset of %s/%d: %v", topic, partition, err)
		}
		committed[partition] = offset
	}
	for _, ft := range fresp.Topics {
		for _, p := range ft.Partitions {
			add(ft.Topic, p.Partition, p.Offset, p.ErrorCode)
		}
	}
	for _, g := range fresp.Groups {
		for _, ft := range g.Topics {
			for _, p := range ft.Partitions {
				add(ft.Topic, p.Partition, p.Offset, p.ErrorCode)
			}
		}
	}

	list := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = k.name
	for _, p := range all {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p, -1 // the end
		lt.Partitions = append(lt.Partitions, lp)
	}
	list.Topics = []kmsg.ListOffsetsRequestTopic{lt}
	lresp, err := list.RequestWith(ctx, k.cl)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", k.name, err)
	}
	end = map[int32]int64{}
	for _, lt := range lresp.Topics {
		for _, p := range lt.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				t.Fatalf("end offset of %s/%d: %v", lt.Topic, p.Partition, err)
			}
			end[p.Partition] = p.Offset
		}
	}
	return committed, end
}
