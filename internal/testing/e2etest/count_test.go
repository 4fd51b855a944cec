package e2etest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"

	"github.com/delaybridge/delaybridge/queue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCountFindsLostEarlyDuplicateCancelledAndForeign(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_000)
	p := NewPlan(5, start, 5*time.Second) // due at +0s, +1s, … +4s
	p.Cancelled = map[int]bool{3: true, 4: true}
	deliver := func(i int, at time.Duration) Delivery {
		return Delivery{Body: []byte(Body(i)), Due: p.Due[i].UnixMilli(), At: p.Due[i].Add(at)}
	}
	early := deliver(1, -time.Millisecond)
	badHeader := deliver(2, time.Second)
	badHeader.Due++
	got := []Delivery{
		deliver(0, 10*time.Millisecond),
		deliver(0, 20*time.Millisecond), // a duplicate
		early,
		badHeader,
		deliver(4, 0), // cancelled, yet delivered
		{Body: []byte("not ours")},
	}
	// Message 3 was cancelled and never arrived: not lost.
	o := p.Count(got, nil)
	want := Outcome{
		Messages: 5, Delivered: 4, Early: 1, CancelledDelivered: 1, Duplicates: 1,
		BadHeader: 1, Foreign: 1, WorstLateness: time.Second, EarlyNumbers: []int{1},
	}
	if diff := cmp.Diff(want, o, cmpopts.IgnoreFields(Outcome{}, "First", "Reasons"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}

	p.Cancelled = nil
	if o := p.Count(got[:1], map[int]string{1: "refused", 2: " "}); o.Dead != 1 || o.Lost != 3 || o.LostNumbers[0] != 2 {
		t.Errorf("dead %d, lost %d %v: want 1 dead, 3 lost (a blank reason is no reason) starting with 2", o.Dead, o.Lost, o.LostNumbers)
	}
}

func TestReceivedCountsDistinctNumbersAsTheyArrive(t *testing.T) {
	var r received
	for _, b := range []string{Body(0), Body(4), Body(0), "not ours", Body(2)} {
		r.add(Delivery{Body: []byte(b)})
	}
	if n := r.Distinct(); n != 3 || !r.Arrived(4) || r.Arrived(3) || r.Received() != 5 {
		t.Errorf("distinct %d (want 3: 0, 2, 4), arrived 4 %v, arrived 3 %v, received %d (want 5)",
			n, r.Arrived(4), r.Arrived(3), r.Received())
	}
}

func TestProducerKeyIsTheSlotKeyOfPackageQueue(t *testing.T) {
	for _, slots := range []int{1, 8, 64} {
		topic := queue.Topic{Name: "orders", Prefix: "p", Slots: slots}
		key := ProducerKey("p", "orders", slots)
		for i := range 200 {
			m := RawMember(i)
			got, err := key(m)
			if err != nil {
				t.Fatal(err)
			}
			if want := topic.Keys(topic.SlotOf([]byte(m))).Scheduled; got != want {
				t.Fatalf("slots %d, message %d: ProducerKey %q, queue %q", slots, i, got, want)
			}
		}
	}
}
