package forwarder

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/queue"
)

// TestWakeUpRingsItsSlotsAlarmAndMarksItsGauges: a wake-up relayed for an
// owned slot announces its score to that slot's scanner only and marks the
// slot's backlog numbers stale; one for an unknown topic does nothing.
func TestWakeUpRingsItsSlotsAlarmAndMarksItsGauges(t *testing.T) {
	t.Parallel()
	f := newWakeForwarder(t)
	woken, other := newAlarm(), newAlarm()
	woken.plan(math.Inf(1)) // both scanners sleep with nothing planned
	other.plan(math.Inf(1))
	f.wakes.add(slotKey{0, 1}, woken)
	f.wakes.add(slotKey{0, 0}, other)
	f.wake.relay(queue.Wake{Topic: "orders", Slot: 1, Score: 1234})
	f.wake.relay(queue.Wake{Topic: "unknown", Slot: 0, Score: 1})
	select {
	case <-woken.C:
	default:
		t.Error("the woken slot's alarm did not ring")
	}
	if got := woken.plan(math.Inf(1)); got != 1234 {
		t.Errorf("woken slot plans %v, want the announced 1234", got)
	}
	select {
	case <-other.C:
		t.Error("the other slot's alarm rang")
	default:
	}
	f.stats.mu.Lock()
	dirty, clean := f.stats.dirty[slotKey{0, 1}], f.stats.dirty[slotKey{0, 0}]
	f.stats.mu.Unlock()
	if !dirty || clean {
		t.Errorf("stale marks: woken slot %v, other %v; want true, false", dirty, clean)
	}
}

// TestSubscribingRingsEverySlotsAlarm: wake-ups published before the
// listener (re)subscribed were missed, so a Subscribed wake-up rings every
// scanner for a message due now and forgets every slot's backlog numbers.
func TestSubscribingRingsEverySlotsAlarm(t *testing.T) {
	t.Parallel()
	f := newWakeForwarder(t)
	alarms := []*alarm{newAlarm(), newAlarm()}
	for i, a := range alarms {
		a.plan(math.Inf(1)) // asleep with nothing planned
		f.wakes.add(slotKey{0, i}, a)
	}
	f.stats.store(slotKey{0, 0}, queue.SlotStats{})
	f.wake.relay(queue.Wake{Subscribed: true, Score: math.Inf(-1)})
	for i, a := range alarms {
		select {
		case <-a.C:
		default:
			t.Errorf("slot %d's alarm did not ring", i)
		}
		if got := a.plan(math.Inf(1)); !math.IsInf(got, -1) {
			t.Errorf("slot %d plans %v, want now (-Inf)", i, got)
		}
	}
	if _, ok := f.stats.reuse(slotKey{0, 0}, true); ok {
		t.Error("slot 0's backlog numbers were kept after a resubscription")
	}
}

// newWakeForwarder is a forwarder, not started, of a 2-slot topic
// "orders" that owns every slot.
func newWakeForwarder(t *testing.T) *Forwarder {
	t.Helper()
	q, prefix := testRedis(t)
	tp := queue.Topic{Name: "orders", Prefix: prefix, Slots: 2}
	f, err := New(Options{Queue: q, Topics: []Topic{{Topic: tp, Sink: newRecordSink()}}, KeyPrefix: prefix, AllSlots: true,
		Metrics: NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	return f
}
