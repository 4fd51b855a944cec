package intake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/delaybridge/delaybridge/queue"
)

// kafkaCluster is a kfake cluster with one seeded topic, closed at the end.
func kafkaCluster(t *testing.T, topic string) (addr string, produce func(...*kgo.Record)) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(2, topic))
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	addr = c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return addr, func(rs ...*kgo.Record) {
		t.Helper()
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

func (f *fixture) startKafka(t *testing.T, addr, topic string, rdb redis.UniversalClient) func() {
	t.Helper()
	in, err := NewKafka(KafkaConfig{Brokers: []string{addr}, Topic: topic, Prefetch: 16, LagInterval: 100 * time.Millisecond},
		Target{Topic: f.topic, MaxBody: 1 << 10}, queue.New(rdb), f.metrics, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	return run(t, in.Run)
}

func hdr(kv ...string) []kgo.RecordHeader {
	var out []kgo.RecordHeader
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return out
}

func TestKafkaIntakeSchedulesRecordsAtTheirDueTimeWithKeyAndHeaders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4)
	addr, produce := kafkaCluster(t, "delays")
	ts := time.UnixMilli(1_900_000_000_000)
	due := int64(1_900_000_123_456)
	produce(
		&kgo.Record{Key: []byte("order-1"), Value: []byte("one"), Timestamp: ts, Headers: hdr("x-delay", "60000", "x-tenant", "acme", "x-delaybridge-id", "id-1")},
		&kgo.Record{Key: []byte("order-2"), Value: []byte("two"), Timestamp: ts, Headers: hdr("x-delay", "5", "x-delaybridge-due", fmt.Sprint(due), "x-delaybridge-id", "id-2")},
		&kgo.Record{Value: []byte("bad"), Timestamp: ts, Headers: hdr("x-delay", "later", "x-delaybridge-id", "id-3")},
		&kgo.Record{Value: []byte(strings.Repeat("x", 2000)), Headers: hdr("x-delaybridge-id", "id-4")},
	)
	f.startKafka(t, addr, "delays", f.rdb)
	waitFor(t, 30*time.Second, "4 records taken in", func() bool {
		return f.counter(f.metrics.Scheduled, "orders")+f.counter(f.metrics.Rejected, "orders", ReasonBadDelay)+
			f.counter(f.metrics.Rejected, "orders", ReasonTooLarge) == 4
	})
	q := queue.New(f.rdb)
	for id, want := range map[string]struct {
		due  time.Time
		body string
		key  string
		hdrs map[string]string
	}{
		"id-1": {ts.Add(time.Minute), "one", "order-1", map[string]string{"x-tenant": "acme"}},
		"id-2": {time.UnixMilli(due), "two", "order-2", nil},
	} {
		info, err := q.Get(context.Background(), f.topic, id)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		if !info.Due.Equal(want.due) || string(info.Message.Body) != want.body || info.Message.RoutingKey != want.key {
			t.Errorf("%s: due %v body %q key %q, want %v %q %q", id, info.Due, info.Message.Body, info.Message.RoutingKey, want.due, want.body, want.key)
		}
		if diff := cmp.Diff(want.hdrs, info.Message.Headers); diff != "" {
			t.Errorf("%s: headers (-want +got):\n%s", id, diff)
		}
	}
	dead, _ := q.DeadList(context.Background(), f.topic, queue.AllSlots, 0)
	reasons := map[string]string{}
	for _, d := range dead {
		reasons[d.ID] = d.Reason
	}
	if !strings.Contains(reasons["id-3"], `"later" is not a number`) || !strings.Contains(reasons["id-4"], "2000 bytes") {
		t.Errorf("dead reasons %v", reasons)
	}
}

func TestKafkaIntakeCommitsOnlyWhatItScheduled(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	addr, produce := kafkaCluster(t, "delays")
	send := func(from, to int) {
		for i := from; i < to; i++ {
			produce(&kgo.Record{Value: []byte(fmt.Sprint(i)), Headers: hdr("x-delay", "60000")})
		}
	}
	send(0, 5)
	stop := f.startKafka(t, addr, "delays", f.rdb)
	waitFor(t, 30*time.Second, "5 scheduled", func() bool { return f.scheduled(t) == 5 })
	stop()

	// A new consumer of the group starts after the committed offsets:
	// nothing read twice, nothing skipped.
	send(5, 8)
	before := f.counter(f.metrics.Received, "orders")
	f.startKafka(t, addr, "delays", f.rdb)
	waitFor(t, 30*time.Second, "8 scheduled", func() bool { return f.scheduled(t) == 8 })
	time.Sleep(500 * time.Millisecond)
	if got := f.counter(f.metrics.Received, "orders") - before; got != 3 {
		t.Errorf("the restarted consumer read %v records, want the 3 new ones", got)
	}
}

func TestKafkaIntakeDoesNotCommitWhatRedisDidNotTake(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	addr, produce := kafkaCluster(t, "delays")
	viaProxy, proxy := proxiedRedis(t)
	for i := range 4 {
		produce(&kgo.Record{Value: []byte(fmt.Sprint(i)), Headers: hdr("x-delay", "60000")})
	}
	proxy.Cut()
	stop := f.startKafka(t, addr, "delays", viaProxy)
	waitFor(t, 30*time.Second, "the records read", func() bool { return f.counter(f.metrics.Received, "orders") == 4 })
	time.Sleep(2 * time.Second) // retrying against the cut Redis
	stop()
	if n := f.scheduled(t); n != 0 {
		t.Fatalf("scheduled %d through a cut Redis", n)
	}
	proxy.Restore()
	f.startKafka(t, addr, "delays", f.rdb)
	waitFor(t, 30*time.Second, "the 4 records scheduled by the next consumer", func() bool { return f.scheduled(t) == 4 })
}

func TestKafkaIntakeLagGaugeFollowsTheGroupBetweenBatches(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	addr, produce := kafkaCluster(t, "delays")
	viaProxy, proxy := proxiedRedis(t)
	for i := range 200 {
		produce(&kgo.Record{Value: []byte(fmt.Sprint(i)), Headers: hdr("x-delay", "60000")})
	}
	proxy.Cut() // the first batch cannot be scheduled: no batch ends meanwhile
	f.startKafka(t, addr, "delays", viaProxy)
	waitFor(t, 30*time.Second, "a lag while the first batch is stuck", func() bool {
		return testutilGauge(f.metrics.Lag, "orders") > 0
	})
	proxy.Restore()
	waitFor(t, 30*time.Second, "200 scheduled and the lag 0", func() bool {
		return f.scheduled(t) == 200 && testutilGauge(f.metrics.Lag, "orders") == 0
	})
}

// TestKafkaIntakeReportsARefusedSessionTimeout: brokers whose
// group.min.session.timeout.ms is above the intake's session timeout never
// let it join its group. kafka-go logs that and retries, and hands the error
// to FetchMessage only after three refusals (about 10 s). The intake's
// health must say why nothing is consumed (for /readyz) from the first
// refusal and keep saying it, nothing is taken in meanwhile, and once the
// brokers accept the timeout the join alone (no record waits) makes it
// healthy again.
func TestKafkaIntakeReportsARefusedSessionTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4)
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(1, "refused")) // minimum 6 s, as Kafka's
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	in, err := NewKafka(KafkaConfig{Brokers: c.ListenAddrs(), Topic: "refused", SessionTimeout: 2 * time.Second, LagInterval: 100 * time.Millisecond},
		Target{Topic: f.topic, MaxBody: 1 << 10}, queue.New(f.rdb), f.metrics, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	run(t, in.Run)
	waitFor(t, 30*time.Second, "health names the refused session timeout", func() bool {
		return errors.Is(in.Health(), ErrSessionTimeoutRefused)
	})
	if msg := in.Health().Error(); !strings.Contains(msg, "2s") || !strings.Contains(msg, "group.min.session.timeout.ms") {
		t.Errorf("health %q: want the configured timeout and the broker setting that bounds it", msg)
	}
	// Past the reader's third refusal, when FetchMessage returns it too.
	for end := time.Now().Add(12 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := in.Health(); !errors.Is(err, ErrSessionTimeoutRefused) {
			t.Fatalf("health %v while the brokers refuse the session timeout, want ErrSessionTimeoutRefused", err)
		}
	}

	setBrokerConfig(t, c.ListenAddrs()[0], "group.min.session.timeout.ms", "1000")
	waitFor(t, 30*time.Second, "healthy once the brokers accept the session timeout", func() bool { return in.Health() == nil })
}

// setBrokerConfig sets one broker configuration of the kfake cluster at addr.
func setBrokerConfig(t *testing.T, addr, name, value string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value, cfg.Op = name, &value, kmsg.IncrementalAlterConfigOpSet
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeBroker
	res.Configs = append(res.Configs, cfg)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("alter broker config %s: %v", name, err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatalf("alter broker config %s: %v", name, err)
		}
	}
}

// Kafka keys and header values are bytes: a binary key, a key with a 0
// byte and a binary header value are scheduled byte for byte, none
// dead-lettered; x-delay may be the 8-byte big-endian integer a Java
// producer writes with Longs.toByteArray. kafka-go's consumer hands an
// empty key over as nil, so the intake cannot tell it from a null key: it
// is scheduled without a key (README says so).
func TestKafkaIntakeKeepsBinaryAndEmptyKeysAndHeaderValuesByteForByte(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4)
	addr, produce := kafkaCluster(t, "delays")
	ts := time.UnixMilli(1_900_000_000_000)
	javaLong := []byte{0, 0, 0, 0, 0, 0, 0xea, 0x60} // 60000
	type want struct {
		key      []byte // nil: no key
		hdrValue string
	}
	cases := map[string]want{
		"binary": {key: []byte{0xff, 0x00, 0xfe, 0x80}},
		"zero":   {key: []byte("a\x00b")},
		"empty":  {},
		"null":   {},
		"header": {key: []byte("k"), hdrValue: "\xde\xad\x00\xbe\xef"},
	}
	for id, w := range cases {
		key := w.key
		if id == "empty" {
			key = []byte{}
		}
		r := &kgo.Record{Key: key, Value: []byte("v-" + id), Timestamp: ts,
			Headers: []kgo.RecordHeader{{Key: "x-delay", Value: javaLong}, {Key: "x-delaybridge-id", Value: []byte(id)}}}
		if w.hdrValue != "" {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: "x-bin", Value: []byte(w.hdrValue)})
		}
		produce(r)
	}
	f.startKafka(t, addr, "delays", f.rdb)
	waitFor(t, 30*time.Second, "5 records taken in", func() bool {
		return f.counter(f.metrics.Scheduled, "orders")+f.counter(f.metrics.Rejected, "orders", ReasonInvalid) == 5
	})
	q := queue.New(f.rdb)
	for id, w := range cases {
		info, err := q.Get(context.Background(), f.topic, id)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		m := info.Message
		if m.RoutingKey != string(w.key) || m.EmptyKey != (w.key != nil && len(w.key) == 0) {
			t.Errorf("%s: key %q (empty %v), want %q (null %v)", id, m.RoutingKey, m.EmptyKey, w.key, w.key == nil)
		}
		if w.hdrValue != "" && m.Headers["x-bin"] != w.hdrValue {
			t.Errorf("%s: header x-bin %q, want %q", id, m.Headers["x-bin"], w.hdrValue)
		}
		if !info.Due.Equal(ts.Add(time.Minute)) {
			t.Errorf("%s: due %v, want the timestamp + 60000 ms of a Java long x-delay", id, info.Due)
		}
	}
}
