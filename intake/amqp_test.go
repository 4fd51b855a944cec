package intake

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/forwarder"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
	"github.com/delaybridge/delaybridge/sinks/amqp"
)

// startForwarder forwards f's topic to r.Dest, as the daemon would.
func (f *fixture) startForwarder(t *testing.T, r *rabbit) {
	t.Helper()
	sink, err := amqp.New(amqp.Config{URL: amqpURL(), Exchange: r.Dest, RoutingKey: "unused"}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	fw, err := forwarder.New(forwarder.Options{
		Queue: queue.New(f.rdb), Topics: []forwarder.Topic{{Topic: f.topic, Sink: sink}}, KeyPrefix: f.topic.Prefix,
		ReplicaID: "intake-test", AllSlots: true, PollInterval: 100 * time.Millisecond,
		Metrics: forwarder.NewMetrics(prometheus.NewRegistry()), Log: testLog(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, fw.Run)
	t.Cleanup(func() { stop(); _ = sink.Close() })
}

type arrival struct {
	d  amqp091.Delivery
	at time.Time
}

// consumeDest collects what arrives in r.DestQueue.
func (r *rabbit) consumeDest(t *testing.T) <-chan arrival {
	t.Helper()
	conn, err := amqp091.Dial(amqpURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(r.DestQueue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan arrival, 100)
	go func() {
		defer close(out)
		for d := range ds {
			out <- arrival{d: d, at: time.Now()}
		}
	}()
	return out
}

func TestAMQPIntakeDeliversPluginStyleMessagesOnTimeAsSent(t *testing.T) {
	t.Parallel()
	f, r := newFixture(t, 4), newRabbit(t)
	got := r.consumeDest(t)
	f.startForwarder(t, r)
	f.startAMQP(t, r, f.rdb, 0)

	ts := time.Unix(1_700_000_000, 0)
	props := func(id string, headers amqp091.Table) amqp091.Publishing {
		return amqp091.Publishing{
			Headers: headers, ContentType: "application/json", ContentEncoding: "utf-8", CorrelationId: "corr-" + id,
			ReplyTo: "replies", MessageId: id, Timestamp: ts, Type: "order.timeout", AppId: "shop", Priority: 3,
			Expiration: "600000", Body: []byte(`{"order":"` + id + `"}`),
		}
	}
	start := time.Now()
	due := start.Add(1200 * time.Millisecond)
	sent := map[string]struct {
		p     amqp091.Publishing
		key   string
		after time.Time
	}{
		"int":    {props("int", amqp091.Table{"x-delay": int32(1500), "x-tenant": "acme"}), "orders.eu", start.Add(1500 * time.Millisecond)},
		"string": {props("string", amqp091.Table{"x-delay": "1000", "x-tenant": "globex"}), "orders.us", start.Add(time.Second)},
		"due":    {props("due", amqp091.Table{"x-delay": int64(60000), sinks.HeaderDue: due.UnixMilli()}), "orders.due", due.Truncate(time.Millisecond)},
		"now":    {props("now", amqp091.Table{"x-delay": int8(-5)}), "orders.now", start},
	}
	for _, s := range sent {
		r.publish(t, s.key, s.p)
	}
	for range sent {
		var a arrival
		select {
		case a = <-got:
		case <-time.After(30 * time.Second):
			t.Fatal("a message did not arrive within 30s")
		}
		s, ok := sent[a.d.MessageId]
		if !ok {
			t.Fatalf("unexpected delivery %q", a.d.MessageId)
		}
		if a.at.Before(s.after) {
			t.Errorf("%s arrived %v before its due time", a.d.MessageId, s.after.Sub(a.at))
		}
		if late := a.at.Sub(s.after); late > 1500*time.Millisecond {
			t.Errorf("%s arrived %v late", a.d.MessageId, late)
		}
		checkAsSent(t, a.d, s.p, s.key)
	}
}

// checkAsSent compares a delivery with what the producer published.
func checkAsSent(t *testing.T, d amqp091.Delivery, p amqp091.Publishing, key string) {
	t.Helper()
	want := amqp091.Publishing{
		ContentType: p.ContentType, ContentEncoding: p.ContentEncoding, CorrelationId: p.CorrelationId, ReplyTo: p.ReplyTo,
		MessageId: p.MessageId, Timestamp: p.Timestamp, Type: p.Type, AppId: p.AppId, Priority: p.Priority,
		Expiration: p.Expiration, Body: p.Body, DeliveryMode: amqp091.Persistent,
	}
	gotP := amqp091.Publishing{
		ContentType: d.ContentType, ContentEncoding: d.ContentEncoding, CorrelationId: d.CorrelationId, ReplyTo: d.ReplyTo,
		MessageId: d.MessageId, Timestamp: d.Timestamp, Type: d.Type, AppId: d.AppId, Priority: d.Priority,
		Expiration: d.Expiration, Body: d.Body, DeliveryMode: d.DeliveryMode,
	}
	if diff := cmp.Diff(want, gotP); diff != "" {
		t.Errorf("%s: properties (-sent +delivered):\n%s", p.MessageId, diff)
	}
	if d.RoutingKey != key {
		t.Errorf("%s: routing key %q, want %q", p.MessageId, d.RoutingKey, key)
	}
	for k, v := range p.Headers {
		if k == HeaderDelay || strings.HasPrefix(k, queue.ReservedHeaderPrefix) {
			continue
		}
		if d.Headers[k] != v {
			t.Errorf("%s: header %s = %#v, want %#v", p.MessageId, k, d.Headers[k], v)
		}
	}
	if _, ok := d.Headers[HeaderDelay]; ok {
		t.Errorf("%s: x-delay was delivered", p.MessageId)
	}
}

func TestAMQPIntakeDeadLettersBadDelayAndOversizedBodyWithReasons(t *testing.T) {
	t.Parallel()
	f, r := newFixture(t, 2), newRabbit(t)
	f.startAMQP(t, r, f.rdb, 16)
	r.publish(t, "k", amqp091.Publishing{MessageId: "soon", Headers: amqp091.Table{"x-delay": "soon"}, Body: []byte("x")})
	r.publish(t, "k", amqp091.Publishing{MessageId: "big", Headers: amqp091.Table{"x-delay": 1000}, Body: []byte(strings.Repeat("b", 17))})
	r.publish(t, "k", amqp091.Publishing{MessageId: "past", Headers: amqp091.Table{sinks.HeaderDue: int64(-1)}, Body: []byte("x")})
	r.publish(t, "k", amqp091.Publishing{MessageId: "bad-app", AppId: "\xff", Body: []byte("x")})
	r.publish(t, "k", amqp091.Publishing{MessageId: "good", Headers: amqp091.Table{"x-delay": 60000}, Body: []byte("ok")})
	// without a message id: dead under its generated id, of the reserved form
	r.publish(t, "k", amqp091.Publishing{Headers: amqp091.Table{"x-delay": "later"}, Body: []byte("anonymous")})
	q := queue.New(f.rdb)
	var dead []queue.DeadMessage
	waitFor(t, 20*time.Second, "five dead messages", func() bool {
		dead, _ = q.DeadList(context.Background(), f.topic, queue.AllSlots, 0)
		return len(dead) == 5
	})
	reasons := map[string]string{}
	for _, d := range dead {
		reasons[d.ID] = d.Reason
		if d.ID != "soon" && d.ID != "big" && d.ID != "past" && d.ID != "bad-app" && !strings.HasPrefix(d.ID, "~amqp:") {
			t.Errorf("dead message %q: want the generated id ~amqp:<sha256>", d.ID)
		}
	}
	for id, want := range map[string]string{"soon": `x-delay: "soon" is not a number`, "big": "body of 17 bytes", "past": "x-delaybridge-due", "bad-app": "properties.app_id"} {
		if !strings.Contains(reasons[id], want) {
			t.Errorf("reason of %s = %q, want it to contain %q", id, reasons[id], want)
		}
	}
	waitFor(t, 10*time.Second, "the good message scheduled and the queue empty", func() bool {
		return f.scheduled(t) == 1 && r.depth(t, r.Queue) == 0
	})
	for reason, want := range map[string]float64{ReasonBadDelay: 2, ReasonTooLarge: 1, ReasonBadDue: 1, ReasonInvalid: 1} {
		if got := f.counter(f.metrics.Rejected, "orders", reason); got != want {
			t.Errorf("rejected{%s} = %v, want %v", reason, got, want)
		}
	}
	if got := f.counter(f.metrics.Scheduled, "orders"); got != 1 {
		t.Errorf("scheduled = %v, want 1", got)
	}
}

func TestAMQPIntakeRedeliveredMessageReplacesItself(t *testing.T) {
	t.Parallel()
	f, r := newFixture(t, 4), newRabbit(t)
	f.startAMQP(t, r, f.rdb, 0)
	for i := range 3 {
		r.publish(t, "k", amqp091.Publishing{MessageId: "same", Headers: amqp091.Table{"x-delay": 60000}, Body: []byte("v" + strconv.Itoa(i))})
		// without a message id, the same bytes get the same id
		r.publish(t, "k", amqp091.Publishing{Headers: amqp091.Table{"x-delay": 60000, "h": "1"}, Body: []byte("anonymous")})
	}
	waitFor(t, 20*time.Second, "six deliveries taken in", func() bool {
		return f.counter(f.metrics.Scheduled, "orders") == 6 && r.depth(t, r.Queue) == 0
	})
	if n := f.scheduled(t); n != 2 {
		t.Errorf("scheduled %d messages, want 2 (each id once)", n)
	}
}

func TestAMQPIntakeReportsQueueDepthAsLag(t *testing.T) {
	t.Parallel()
	f, r := newFixture(t, 1), newRabbit(t)
	for i := range 5 {
		r.publish(t, "k", amqp091.Publishing{MessageId: fmt.Sprint(i), Body: []byte("x")})
	}
	waitFor(t, 5*time.Second, "5 messages queued", func() bool { return r.depth(t, r.Queue) == 5 })
	f.startAMQP(t, r, f.rdb, 0)
	waitFor(t, 10*time.Second, "the queue drained and lag 0", func() bool {
		return f.scheduled(t) == 5 && testutilGauge(f.metrics.Lag, "orders") == 0
	})
}
