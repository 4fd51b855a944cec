package forwarder

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/internal/testing/faultproxy"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
	"github.com/delaybridge/delaybridge/sinks/amqp"
)

// tickDelivery is one tick as a RabbitMQ consumer received it.
type tickDelivery struct {
	id, recurrence string
	due, at        time.Time // x-delaybridge-due; when it arrived (local clock)
}

// tickConsumer declares an exchange and queue named name (bound with key
// "k") and records every delivery.
type tickConsumer struct {
	url string
	mu  sync.Mutex
	got []tickDelivery
}

func (c *tickConsumer) deliveries() []tickDelivery {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]tickDelivery(nil), c.got...)
}

func consumeTicks(t *testing.T, name string) *tickConsumer {
	t.Helper()
	c := &tickConsumer{}
	c.url = consumeExchange(t, name, func(d amqp091.Delivery) {
		now := time.Now()
		due, _ := d.Headers[sinks.HeaderDue].(int64)
		rec, _ := d.Headers[queue.HeaderRecurrence].(string)
		c.mu.Lock()
		c.got = append(c.got, tickDelivery{id: d.MessageId, recurrence: rec, due: time.UnixMilli(due), at: now})
		c.mu.Unlock()
	})
	return c
}

// byRecurrence groups deliveries by recurrence, in due order, one per id
// (dups counts the extra copies).
func byRecurrence(ds []tickDelivery) (per map[string][]tickDelivery, dups int) {
	per = map[string][]tickDelivery{}
	seen := map[string]bool{}
	for _, d := range ds {
		if seen[d.id] {
			dups++
			continue
		}
		seen[d.id] = true
		per[d.recurrence] = append(per[d.recurrence], d)
	}
	for _, ds := range per {
		sort.Slice(ds, func(i, j int) bool { return ds[i].due.Before(ds[j].due) })
	}
	return per, dups
}

// recurring starts one forwarder of a raw topic whose sink publishes to
// exchange name through url, with a routing key no queue is bound to: only
// a tick's own routing key ("k") reaches the consumer.
func recurring(t *testing.T, q *queue.Queue, prefix, url, name string) (queue.Topic, *prometheus.Registry) {
	t.Helper()
	topic := queue.Topic{Name: "recurring", Prefix: prefix, Slots: 4}
	sink, err := amqp.New(amqp.Config{URL: url, Exchange: name, RoutingKey: "unbound"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	reg := prometheus.NewRegistry()
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, ReplicaID: "r0", Metrics: NewMetrics(reg)})
	return topic, reg
}

func setRecurrences(t *testing.T, q *queue.Queue, topic queue.Topic, specs map[string]string) {
	t.Helper()
	for id, spec := range specs {
		r := queue.Recurrence{ID: id, Spec: spec, Message: queue.Message{Body: []byte(id), RoutingKey: "k"}}
		if _, err := q.SetRecurrence(context.Background(), topic, r); err != nil {
			t.Fatal(err)
		}
	}
}

func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[(len(ds)*99+99)/100-1]
}

var recurrenceSpecs = map[string]string{"every1s": "@every 1s", "every2s": "@every 2s", "cron3s": "*/3 * * * * *"}

var recurrencePeriods = map[string]time.Duration{"every1s": time.Second, "every2s": 2 * time.Second, "cron3s": 3 * time.Second}

// extraEvery1s is how many "@every 1s" recurrences run beside the three of
// the issue, so more ticks are measured (37 in 20 s over the three alone).
// All ticks fall due on whole seconds, so a stall of the machine at one of
// them makes a dozen late at once: the p99 is that of 20 instants.
const extraEvery1s = 12

// Lateness measured on the 2-core development machine while the rest of
// the suite ran: without the race detector p50 2-4 ms, p99 3-9 ms; with it
// and nothing else p50 9 ms, p99 17 ms; with it beside three other packages
// p99 17-71 ms, and over the three recurrences alone once 279 ms. The
// issue's p99 ≤ 50 ms is checked without the race detector; with it the
// median is, and no tick may be a period late.
const (
	maxP99      = 50 * time.Millisecond
	maxP50      = 50 * time.Millisecond
	maxLateRace = 900 * time.Millisecond
)

func TestRecurrencesDeliverEveryTickOnceOnScheduleAndRemoveStopsThem(t *testing.T) {
	q, prefix := testRedis(t)
	c := consumeTicks(t, prefix)
	topic, _ := recurring(t, q, prefix, c.url, prefix)
	specs, periods := maps.Clone(recurrenceSpecs), maps.Clone(recurrencePeriods)
	for i := range extraEvery1s {
		id := fmt.Sprintf("extra%d", i)
		specs[id], periods[id] = "@every 1s", time.Second
	}
	begin := time.Now()
	setRecurrences(t, q, topic, specs)
	time.Sleep(20 * time.Second)
	for id := range specs {
		if ok, err := q.RemoveRecurrence(context.Background(), topic, id); !ok || err != nil {
			t.Fatalf("remove %s: %v, %v", id, ok, err)
		}
	}
	removed := time.Now()
	time.Sleep(2500 * time.Millisecond)

	per, dups := byRecurrence(c.deliveries())
	if dups > 0 {
		t.Errorf("%d ticks delivered twice", dups)
	}
	var lateness []time.Duration
	for id, period := range periods {
		ds := per[id]
		if want := int(20*time.Second/period) - 1; len(ds) < want {
			t.Errorf("%s: %d ticks in 20 s, want at least %d", id, len(ds), want)
		}
		for i, d := range ds {
			late := d.at.Sub(d.due)
			lateness = append(lateness, late)
			if late < 0 {
				t.Errorf("%s: tick %s delivered %s early", id, d.id, -late)
			}
			if i > 0 && d.due.Sub(ds[i-1].due) != period {
				t.Errorf("%s: ticks %s and %s are %s apart, want %s", id, ds[i-1].id, d.id, d.due.Sub(ds[i-1].due), period)
			}
			if d.due.After(removed.Add(time.Second)) {
				t.Errorf("%s: tick due %s after the remove was delivered", id, d.due.Sub(removed))
			}
			if d.due.Before(begin) {
				t.Errorf("%s: tick due before the recurrence was set", id)
			}
		}
		if len(ds) > 0 && ds[0].due.Sub(begin) > period+time.Second {
			t.Errorf("%s: first tick %s after set", id, ds[0].due.Sub(begin))
		}
	}
	p := p99(lateness) // sorts lateness
	p50, worst := lateness[len(lateness)/2], lateness[len(lateness)-1]
	t.Logf("%d ticks, lateness p50 %s, p99 %s, max %s (race detector: %v)", len(lateness), p50, p, worst, raceDetector)
	switch {
	case !raceDetector && p > maxP99:
		t.Errorf("lateness p99 %s, want at most %s", p, maxP99)
	case raceDetector && (p50 > maxP50 || worst > maxLateRace):
		t.Errorf("lateness p50 %s, max %s under -race, want at most %s and %s", p50, worst, maxP50, maxLateRace)
	}
	if left, _ := q.Recurrences(context.Background(), topic); len(left) != 0 {
		t.Errorf("recurrences left: %v", left)
	}
}

func TestBrokerCutDeliversOneTickFromInsideThenResumesOnSchedule(t *testing.T) {
	q, prefix := testRedis(t)
	c := consumeTicks(t, prefix)
	broker := strings.TrimSuffix(strings.SplitN(c.url, "@", 2)[1], "/")
	proxy, err := faultproxy.New(context.Background(), broker)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	topic, reg := recurring(t, q, prefix, "amqp://guest:guest@"+proxy.Addr()+"/", prefix)
	specs := map[string]string{"every1s": "@every 1s", "every2s": "@every 2s"}
	setRecurrences(t, q, topic, specs)
	time.Sleep(4 * time.Second)
	proxy.Cut()
	cut := time.Now()
	time.Sleep(6 * time.Second)
	proxy.Restore()
	restored := time.Now()
	time.Sleep(8 * time.Second)

	per, _ := byRecurrence(c.deliveries()) // duplicates may follow a cut: one id each
	for id := range specs {
		period := recurrencePeriods[id]
		ds, inside := per[id], 0
		for i, d := range ds {
			if d.due.After(cut) && d.due.Before(restored) {
				inside++
			}
			if d.at.Before(d.due) {
				t.Errorf("%s: tick %s delivered early", id, d.id)
			}
			if i > 0 && d.due.Sub(ds[i-1].due)%period != 0 {
				t.Errorf("%s: ticks %s and %s are off the schedule", id, ds[i-1].id, d.id)
			}
			if i > 0 && d.due.Sub(ds[i-1].due) != period && (d.due.Before(restored) || ds[i-1].at.Before(cut)) {
				t.Errorf("%s: a gap between %s and %s outside the cut", id, ds[i-1].id, d.id)
			}
		}
		if inside > 1 {
			t.Errorf("%s: %d ticks from inside the cut delivered, want at most 1", id, inside)
		}
		if n := len(ds); n == 0 || ds[n-1].due.Before(restored.Add(5*time.Second)) {
			t.Errorf("%s: ticks did not resume after the cut", id)
		}
		t.Logf("%s: %d ticks, %d from inside the cut", id, len(ds), inside)
	}
	if skipped := gatherSeries(t, reg)[`delaybridge_recurrence_ticks_skipped_total{topic="recurring"}`]; skipped < 4 {
		t.Errorf("recurrence_ticks_skipped_total = %v, want the ticks of the cut", skipped)
	}
}
