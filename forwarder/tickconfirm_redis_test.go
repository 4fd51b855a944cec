package forwarder

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/queue"
)

// tickRig is one slot's scanner driven by hand, over a topic of one slot
// with one recurrence: the test claims its tick, answers it and records
// the answer itself, each when it chooses.
type tickRig struct {
	q     *queue.Queue
	topic queue.Topic
	reg   *prometheus.Registry
	s     *scanner
	first time.Time // the recurrence's first tick
}

func newTickRig(t *testing.T, spec string) *tickRig {
	t.Helper()
	q, prefix := testRedis(t)
	topic := queue.Topic{Name: "ticks", Prefix: prefix}
	reg := prometheus.NewRegistry()
	f, err := New(Options{Queue: q, Topics: []Topic{{topic, newRecordSink()}}, KeyPrefix: prefix, AllSlots: true,
		Metrics: NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	first, err := q.SetRecurrence(context.Background(), topic, queue.Recurrence{ID: "beat", Spec: spec,
		Message: queue.Message{Body: []byte("beat")}})
	if err != nil {
		t.Fatal(err)
	}
	return &tickRig{q: q, topic: topic, reg: reg, s: f.newScanner(slotKey{}, newAlarm()), first: first}
}

// redisNow is Redis's clock.
func (r *tickRig) redisNow(t *testing.T) time.Time {
	t.Helper()
	now, err := r.q.Client().Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// waitRedis sleeps until Redis's clock is past at.
func (r *tickRig) waitRedis(t *testing.T, at time.Time) {
	t.Helper()
	for now := r.redisNow(t); !now.After(at); now = r.redisNow(t) {
		time.Sleep(min(at.Sub(now)+time.Millisecond, 50*time.Millisecond))
	}
}

// claimFirst claims the first tick once due, as the claimer does: a batch
// with the claim's reading of Redis's clock.
func (r *tickRig) claimFirst(t *testing.T) batch {
	t.Helper()
	r.waitRedis(t, r.first)
	c, err := r.q.ClaimAhead(context.Background(), r.topic, 0, 10, time.Minute, 0)
	after := time.Now()
	if err != nil || len(c.Messages) != 1 || !queue.IsTick(c.Messages[0].Member) {
		t.Fatalf("claim the first tick: %v, %d messages", err, len(c.Messages))
	}
	return batch{claimed: c.Messages, redisClock: redisClock{redis: c.Now, local: after}}
}

// confirm publishes b's tick as confirmed by the broker now, and has the
// settler take the answer (await), as settleLoop does before its ack waits.
func (r *tickRig) confirm(b batch) *delivery {
	d := r.s.prepare(b)
	d.finish(wallClock{}, nil)
	r.s.await(context.Background(), d)
	return d
}

// next is the recurrence's next tick as Redis holds it, and how many ticks
// the metric says were skipped.
func (r *tickRig) next(t *testing.T) (time.Time, float64) {
	t.Helper()
	rs, err := r.q.Recurrences(context.Background(), r.topic)
	if err != nil || len(rs) != 1 {
		t.Fatalf("Recurrences = %v, %v", rs, err)
	}
	skipped := gatherSeries(t, r.reg)[`delaybridge_recurrence_ticks_skipped_total{topic="ticks"}`]
	return rs[0].Next, skipped
}

// TestTickConfirmedBeforeTheNextIsDueSchedulesItHoweverLateItsAckIsWritten:
// a tick is confirmed well before the next one is due, and its ack is
// written only after that (held back as a Redis stall holds it; acks
// always wait up to ackDelay). Delivery never stopped, so the gap rule
// skips nothing: the next tick is the one due next, written in the past
// and delivered at once, late but not early. Computed from the time the ack
// was written, it was skipped.
func TestTickConfirmedBeforeTheNextIsDueSchedulesItHoweverLateItsAckIsWritten(t *testing.T) {
	t.Parallel()
	const every = 2 * time.Second
	r := newTickRig(t, "@every 2s")
	second := r.first.Add(every)
	d := r.confirm(r.claimFirst(t))
	if !d.answered.Before(second) {
		t.Fatalf("the tick was confirmed at %v, not before the next tick %v: the host is too slow for this test", d.answered, second)
	}
	r.waitRedis(t, second.Add(200*time.Millisecond)) // the ack waits past the next tick's due
	r.s.record(context.Background(), []*delivery{d})
	next, skipped := r.next(t)
	if !next.Equal(second) || skipped != 0 {
		t.Errorf("tick %v confirmed at %v, acked after %v: next tick %v, %v skipped; want %v, none skipped",
			r.first, d.answered, second, next, skipped, second)
	}
	if w := r.waiting(t); len(w) != 1 || !w[0].Equal(second) {
		t.Errorf("ticks waiting at %v, want one at %v", w, second)
	}
}

// TestTickConfirmedAfterTheNextWasDueSkipsToTheSchedule: the documented gap
// rule still holds. The tick is delivered (confirmed) only after the next
// one fell due, as after the broker was down: the tick from inside the gap
// went out, and the next is the first of the schedule after its confirm.
func TestTickConfirmedAfterTheNextWasDueSkipsToTheSchedule(t *testing.T) {
	t.Parallel()
	const every = time.Second
	r := newTickRig(t, "@every 1s")
	b := r.claimFirst(t)
	r.waitRedis(t, r.first.Add(every+200*time.Millisecond)) // nothing could deliver it until now
	d := r.confirm(b)
	third := r.first.Add(2 * every)
	if !d.answered.Before(third) {
		t.Fatalf("the tick was confirmed at %v, not before %v: the host is too slow for this test", d.answered, third)
	}
	r.s.record(context.Background(), []*delivery{d})
	if next, skipped := r.next(t); !next.Equal(third) || skipped != 1 {
		t.Errorf("tick %v confirmed at %v: next tick %v, %v skipped; want %v, 1 skipped", r.first, d.answered, next, skipped, third)
	}
}

// waiting are the due times of the ticks waiting in the slot.
func (r *tickRig) waiting(t *testing.T) []time.Time {
	t.Helper()
	zs, err := r.q.Client().ZRangeWithScores(context.Background(), r.topic.Keys(0).Scheduled, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var at []time.Time
	for _, z := range zs {
		if m, _ := z.Member.(string); queue.IsTick(m) {
			at = append(at, queue.MillisTime(z.Score))
		}
	}
	return at
}

// TestTickAnswerIsStampedWhenItComesNotWhenTheSettlerTakesIt: the settler
// takes a Starter sink's answers one at a time, between its Redis writes;
// the answer about a batch with ticks carries the moment it came, so a
// settler busy writing earlier answers does not make its ticks later.
func TestTickAnswerIsStampedWhenItComesNotWhenTheSettlerTakesIt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sinkDone := make(chan struct{})
	d := &delivery{done: sinkDone, result: func() error { return nil }, vouched: map[string]bool{"tick": true}}
	d.stampAnswer(ctx, wallClock{})
	close(sinkDone)
	came := time.Now()
	const busy = time.Second // the settler writes an earlier group meanwhile
	time.Sleep(busy)
	(&scanner{}).await(ctx, d)
	if late := d.answered.Sub(came); late > busy/2 {
		t.Errorf("the answer came at %v and was stamped %v later, the settler took it %v later", came, late, busy)
	}
}
