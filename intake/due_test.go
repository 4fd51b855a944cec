package intake

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/delaybridge/delaybridge/queue"
)

func TestXDelayAcceptsEveryAMQPIntegerTypeAndNumericText(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want string // queue.When.String(), or "" for an error
	}{
		{int8(5), "in 5ms"}, {uint8(5), "in 5ms"}, {int16(1500), "in 1.5s"}, {uint16(1500), "in 1.5s"},
		{int32(3000), "in 3s"}, {uint32(3000), "in 3s"}, {int64(60000), "in 1m0s"}, {3000, "in 3s"},
		{"3000", "in 3s"}, {" 3000 ", "in 3s"}, {"2.9", "in 2ms"}, {[]byte("10"), "in 10ms"}, {float64(1e3), "in 1s"},
		{int32(0), "in 0s"}, {int32(-500), "in 0s"}, {"-1", "in 0s"},
		{"soon", ""}, {true, ""}, {math.NaN(), ""}, {"1e300", ""}, {int64(1) << 60, ""},
	} {
		w, err := delayFrom(tt.v, time.Time{}, time.Time{})
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("x-delay %#v = %v, want an error", tt.v, w)
		case tt.want != "" && (err != nil || w.String() != tt.want):
			t.Errorf("x-delay %#v = %v, %v; want %s", tt.v, w, err, tt.want)
		}
	}
}

func TestDueHeaderWinsOverXDelay(t *testing.T) {
	due := time.UnixMilli(1_900_000_000_000)
	it := Target{}.deliveryItem(amqp091.Delivery{Headers: amqp091.Table{"x-delay": 5000, HeaderDue: "1900000000000"}}, time.Now())
	if it.reason != "" || it.when.String() != queue.At(due).String() {
		t.Errorf("when %v (reason %q), want %v", it.when, it.why, queue.At(due))
	}
	it = Target{}.deliveryItem(amqp091.Delivery{}, time.Now())
	if it.when.String() != (queue.When{}).String() {
		t.Errorf("no delay header: when %v, want due now", it.when)
	}
}

func TestDeliveryHeadersBecomeTextWithoutDelayHeaders(t *testing.T) {
	d := amqp091.Delivery{RoutingKey: "rk", Body: []byte("b"), Headers: amqp091.Table{
		"x-delay": 10, "X-Delaybridge-Attempt": "9", "s": "text", "i": int32(-7), "b": true, "f": 1.5,
		"ts": time.Unix(1_700_000_000, 0), "tbl": amqp091.Table{"z": 1, "a": "x"}, "arr": []any{1, "two"},
		"dec": amqp091.Decimal{Scale: 2, Value: -5},
	}}
	it := Target{}.deliveryItem(d, time.Now())
	want := map[string]string{
		"s": "text", "i": "-7", "b": "true", "f": "1.5", "ts": "2023-11-14T22:13:20Z",
		"tbl": `{"a":"x","z":1}`, "arr": `[1,"two"]`, "dec": "-0.05",
	}
	if len(it.msg.Headers) != len(want) {
		t.Errorf("headers %v, want %v", it.msg.Headers, want)
	}
	for k, v := range want {
		if it.msg.Headers[k] != v {
			t.Errorf("header %s = %q, want %q", k, it.msg.Headers[k], v)
		}
	}
	if it.msg.RoutingKey != "rk" || (Target{OwnRoutingKey: true}).deliveryItem(d, time.Now()).msg.RoutingKey != "" {
		t.Errorf("routing key kept %q; with the topic's own it must be dropped", it.msg.RoutingKey)
	}
}

func TestDeliveryWithoutMessageIDGetsAStableIDOfItsContent(t *testing.T) {
	d := amqp091.Delivery{RoutingKey: "rk", Body: []byte("b"), Headers: amqp091.Table{"h": "1", "x-delay": 10}}
	a, b := deliveryID(d), deliveryID(d)
	if a != b || len(a) != len("~amqp:")+64 || !strings.HasPrefix(a, "~amqp:") {
		t.Errorf("ids %q %q: want one ~amqp:<hex SHA-256>", a, b)
	}
	for _, other := range []amqp091.Delivery{
		{RoutingKey: "rk", Body: []byte("c"), Headers: d.Headers},
		{RoutingKey: "rk2", Body: d.Body, Headers: d.Headers},
		{RoutingKey: "rk", Body: d.Body, Headers: amqp091.Table{"h": "2", "x-delay": 10}},
	} {
		if deliveryID(other) == a {
			t.Errorf("%+v has the same id as %+v", other, d)
		}
	}
	if id := deliveryID(amqp091.Delivery{MessageId: "m-1", Body: []byte("b")}); id != "m-1" {
		t.Errorf("id %q, want the message id", id)
	}
	// A producer's message-id of the reserved form is not its id: it could
	// name a Kafka record's id, or another delivery's.
	if id := deliveryID(amqp091.Delivery{MessageId: "~kafka:orders/0/7", Body: []byte("b")}); !strings.HasPrefix(id, "~amqp:") {
		t.Errorf("id %q: a message-id of the reserved form must not be taken", id)
	}
}

// TestXDelayCountsFromWhenTheIntakeReceivedTheDelivery writes a delivery
// with x-delay 1000 that the intake received 400 ms before its batch went to
// Redis (a batch waiting for the one before, a slow Redis): it is due 600 ms
// after Redis's TIME at the write, 1 s after it arrived, not 1 s after the
// write.
func TestXDelayCountsFromWhenTheIntakeReceivedTheDelivery(t *testing.T) {
	f := newFixture(t, 1)
	ctx := context.Background()
	s := &scheduler{q: queue.New(f.rdb), target: Target{Topic: f.topic}, metrics: f.metrics, log: testLog(t)}
	before, err := f.rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	received := time.Now().Add(-400 * time.Millisecond)
	it := s.target.deliveryItem(amqp091.Delivery{MessageId: "m-1", Body: []byte("b"), Headers: amqp091.Table{"x-delay": int32(1000)}}, received)
	if errs := s.put(ctx, []item{it}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	after, err := f.rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	r, err := queue.New(f.rdb).Get(ctx, f.topic, "m-1")
	if err != nil {
		t.Fatal(err)
	}
	lo := float64(before.Add(600*time.Millisecond).UnixMicro()) / 1000
	hi := float64(after.Add(600*time.Millisecond).UnixMilli() + 1)
	// In microseconds, as lo: queue.Millis goes through UnixNano, which a
	// float64 cannot hold, and put the score of 1795526414198 ms at
	// 1795526414198.000244, above a hi of exactly that millisecond.
	if score := float64(r.Due.UnixMicro()) / 1000; score < lo || score > hi {
		t.Errorf("due at %.0f ms, want %.3f to %.0f: 1 s after the delivery arrived, 600 ms after the write", score, lo, hi)
	}
}

// TestRelayStampsEachDeliveryWhenItArrives: the relay's time is what
// x-delay counts from.
func TestRelayStampsEachDeliveryWhenItArrives(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	in := make(chan amqp091.Delivery)
	out := buffer(ctx, in, 4, &wg)
	for i := range 3 {
		before := time.Now()
		in <- amqp091.Delivery{DeliveryTag: uint64(i + 1)}
		r := <-out
		after := time.Now()
		if r.DeliveryTag != uint64(i+1) || r.at.Before(before) || r.at.After(after) {
			t.Errorf("delivery %d stamped %v, want between %v and %v", r.DeliveryTag, r.at, before, after)
		}
	}
}

// TestKafkaRecordWithoutIDGetsTheIntakesReservedForm: a record without an
// x-delaybridge-id is named "~kafka:<topic>/<partition>/<offset>", a form no
// producer can schedule; a header of that form is not taken as the id.
func TestKafkaRecordWithoutIDGetsTheIntakesReservedForm(t *testing.T) {
	r := kafkago.Message{Topic: "delays", Partition: 2, Offset: 7, Value: []byte("v")}
	if id := (Target{}).recordItem(r).msg.ID; id != "~kafka:delays/2/7" {
		t.Errorf("id %q, want ~kafka:delays/2/7", id)
	}
	r.Headers = []kafkago.Header{{Key: HeaderID, Value: []byte("~kafka:delays/2/8")}}
	if id := (Target{}).recordItem(r).msg.ID; id != "~kafka:delays/2/7" {
		t.Errorf("id %q: a header of the reserved form must not be taken", id)
	}
	r.Headers = []kafkago.Header{{Key: HeaderID, Value: []byte("own-1")}}
	if id := (Target{}).recordItem(r).msg.ID; id != "own-1" {
		t.Errorf("id %q, want the header's own-1", id)
	}
}
