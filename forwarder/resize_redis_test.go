package forwarder

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks/amqp"
)

// A topic resized while messages wait: those in slots beyond the new count
// are found, drained under ownership and leases, and delivered to RabbitMQ
// once each, none early; the stranded gauge ends at 0.
func TestResizeDeliversEveryWaitingMessageOnceAndNoneEarly(t *testing.T) {
	for _, tc := range []struct {
		from, to, replicas int
	}{{8, 4, 2}, {4, 16, 1}} {
		t.Run(fmt.Sprintf("%dto%d", tc.from, tc.to), func(t *testing.T) {
			testResize(t, tc.from, tc.to, tc.replicas)
		})
	}
}

func testResize(t *testing.T, from, to, replicas int) {
	q, prefix := testRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rabbit := e2etest.NewRabbit(t, "delaybridge-resize-"+redistest.Suffix(), nil)
	rabbit.Consume(t)
	sink, err := amqp.New(amqp.Config{URL: e2etest.AMQPURL(), Exchange: rabbit.Exchange, RoutingKey: rabbit.Queue}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	if err := sink.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}

	// Messages due over the next 1.5 s, scheduled with the old count; the
	// old daemon forwards for a while, then stops.
	const n = 300
	before := queue.Topic{Name: "orders", Prefix: prefix, Slots: from}
	schedule(t, q, before, 0, n, 1500*time.Millisecond)
	stop := start(t, Options{Queue: q, Topics: []Topic{{Topic: before, Sink: sink}}, AllSlots: true})
	time.Sleep(300 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	total := n
	after := queue.Topic{Name: "orders", Prefix: prefix, Slots: to}
	if from > to {
		// A replica died holding a claim in a slot the new count drops:
		// the reaper of the slot's new owner must return it.
		strandedClaim(t, q, before.Keys(from-1), e2etest.Body(total))
		total++
		if got, err := q.StrandedSlots(ctx, after); err != nil || len(got) == 0 {
			t.Fatalf("no stranded slots after the resize (%v, %v): the test proves nothing", got, err)
		}
	} else {
		schedule(t, q, after, total, 50, 500*time.Millisecond) // producers with the new count
		total += 50
	}

	var metrics []*Metrics
	for i := range replicas {
		m := NewMetrics(prometheus.NewRegistry())
		metrics = append(metrics, m)
		start(t, Options{
			Queue: q, Topics: []Topic{{Topic: after, Sink: sink}}, Metrics: m,
			ReplicaID: fmt.Sprintf("r%d", i), HeartbeatInterval: 50 * time.Millisecond, HeartbeatTTL: 500 * time.Millisecond,
			StrandedInterval: 200 * time.Millisecond, Lease: time.Second,
		})
	}
	stranded := func() (sum float64) {
		for _, m := range metrics {
			sum = max(sum, testutil.ToFloat64(m.Stranded.WithLabelValues("orders")))
		}
		return sum
	}
	var seen float64
	eventually(t, 15*time.Second, "every message delivered and the stranded gauge at 0", func() bool {
		seen = max(seen, stranded())
		return rabbit.Distinct() == total && stranded() == 0
	})
	if from > to && seen == 0 {
		t.Errorf("delaybridge_stranded_messages never showed the stranded messages")
	}
	time.Sleep(200 * time.Millisecond) // a duplicate would arrive by now
	checkOnceNoneEarly(t, rabbit.Deliveries(), total)
}

// schedule schedules messages first…first+count-1, due from 100 ms ago to
// over, spread evenly.
func schedule(t *testing.T, q *queue.Queue, tp queue.Topic, first, count int, over time.Duration) {
	t.Helper()
	now := time.Now().Add(-100 * time.Millisecond)
	items := make([]queue.Item, count)
	for i := range items {
		items[i] = queue.Item{
			Message: queue.Message{Body: []byte(e2etest.Body(first + i))},
			When:    queue.At(now.Add(over * time.Duration(i) / time.Duration(count))),
		}
	}
	if _, err := q.ScheduleBatch(context.Background(), tp, items); err != nil {
		t.Fatal(err)
	}
}

// strandedClaim leaves member in flight in keys with a lease that expired,
// due 2 s ago, as a replica that died after claiming it would.
func strandedClaim(t *testing.T, q *queue.Queue, k queue.SlotKeys, member string) {
	t.Helper()
	ctx := context.Background()
	due := time.Now().Add(-2 * time.Second).UnixMilli()
	if err := q.Client().ZAdd(ctx, k.Inflight, redis.Z{Score: float64(due + 1000), Member: member}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := q.Client().HSet(ctx, k.Due, member, due).Err(); err != nil {
		t.Fatal(err)
	}
}

func checkOnceNoneEarly(t *testing.T, got []e2etest.Delivery, total int) {
	t.Helper()
	count := map[int]int{}
	for _, d := range got {
		nr := e2etest.Number(d.Body)
		count[nr]++
		if d.At.UnixMilli() < d.Due {
			t.Errorf("message %d arrived at %d, before its due time %d", nr, d.At.UnixMilli(), d.Due)
		}
	}
	for i := range total {
		if count[i] != 1 {
			t.Errorf("message %d delivered %d times, want once", i, count[i])
		}
	}
	if len(count) != total {
		t.Errorf("delivered %d distinct messages, want %d", len(count), total)
	}
}
