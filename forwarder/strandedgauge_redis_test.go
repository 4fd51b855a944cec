package forwarder

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks/amqp"
)

// TestStrandedGaugeReadsZeroWithinSecondsOfTheDrain: messages in slots
// beyond the topic's count are found by the search at start (the gauge
// shows them), delivered, and the gauge reads 0 within seconds, with the
// default StrandedInterval of minutes: an alert on it stops with the drain.
// Before, only the next search (2 minutes later) set it back.
func TestStrandedGaugeReadsZeroWithinSecondsOfTheDrain(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rabbit := e2etest.NewRabbit(t, "delaybridge-stranded-"+redistest.Suffix(), nil)
	rabbit.Consume(t)
	sink, err := amqp.New(amqp.Config{URL: e2etest.AMQPURL(), Exchange: rabbit.Exchange, RoutingKey: rabbit.Queue}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	if err := sink.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 200
	wide := queue.Topic{Name: "orders", Prefix: prefix, Slots: 8} // a producer with another slot count
	schedule(t, q, wide, 0, n, 0)
	topic := queue.Topic{Name: "orders", Prefix: prefix, Slots: 1}
	if got, err := q.StrandedSlots(ctx, topic); err != nil || len(got) == 0 {
		t.Fatalf("no stranded slots (%v, %v): the test proves nothing", got, err)
	}
	m := NewMetrics(prometheus.NewRegistry())
	f, _ := startF(t, Options{Queue: q, Topics: []Topic{{Topic: topic, Sink: sink}}, Metrics: m, AllSlots: true},
		func(f *Forwarder) { f.search.passed = make(passes, 1) })
	gauge := func() float64 { return testutil.ToFloat64(m.Stranded.WithLabelValues("orders")) }
	var seen float64
	eventually(t, 15*time.Second, "every message delivered", func() bool {
		seen = max(seen, gauge())
		return rabbit.Distinct() == n
	})
	if seen == 0 {
		t.Errorf("delaybridge_stranded_messages never showed the stranded messages")
	}
	drained := time.Now()
	waitPasses(t, f.search.passed, 5*time.Second, "the stranded gauge at 0 after the drain", func() bool { return gauge() == 0 })
	t.Logf("gauge at 0 %s after the last delivery was seen", time.Since(drained).Round(time.Millisecond))
}
