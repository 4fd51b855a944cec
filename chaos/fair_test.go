package chaos

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// fairKeys is how many keys the fair topic's messages have: message i has
// key "k<i mod fairKeys>".
const fairKeys = 5

// fairSide is a fair topic ("fair", docs/flow-control.md "Fair share")
// served beside a bridge's topic by the same daemons, delivered to a queue
// of its own: one key has half its messages, the others share the rest.
type fairSide struct {
	b     *bridge
	topic queue.Topic
	mq    *e2etest.Rabbit
	plan  *e2etest.Plan
}

// addFair adds the fair topic to b's daemon variables and declares its
// exchange and queue; schedule writes its messages.
func addFair(b *bridge) *fairSide {
	b.t.Helper()
	f := &fairSide{b: b, mq: e2etest.NewRabbit(b.t, b.name+"-fair", nil),
		topic: queue.Topic{Name: "fair", Prefix: b.name, Slots: defaultSlots, Format: queue.FormatEnvelope, Fair: true}}
	for k, v := range f.mq.TopicVars(b.name, f.topic.Name, defaultSlots) {
		if k != "DELAYBRIDGE_KEY_PREFIX" && k != "DELAYBRIDGE_TOPICS" {
			b.vars[k] = v
		}
	}
	b.vars["DELAYBRIDGE_TOPICS"] += "," + f.topic.Name
	b.vars["DELAYBRIDGE_TOPIC_FAIR_FORMAT"] = "envelope"
	b.vars["DELAYBRIDGE_TOPIC_FAIR_FAIR"] = "true"
	f.mq.Consume(b.t)
	return f
}

// keyOf is message i's key: k0 for every other message, the rest spread.
func keyOf(i int) string {
	if i%2 == 0 {
		return "k0"
	}
	return "k" + strconv.Itoa(1+(i/2)%(fairKeys-1))
}

// schedule writes n messages spread over [from, from+spread) through the
// producer API (ids "f-<i>"), which indexes them for the fair claim.
func (f *fairSide) schedule(n int, from time.Time, spread time.Duration) {
	f.b.t.Helper()
	f.plan = e2etest.NewPlan(n, from, spread)
	items := make([]queue.Item, n)
	for i := range items {
		items[i] = queue.Item{Message: queue.Message{ID: "f-" + strconv.Itoa(i), Key: keyOf(i), Body: []byte(e2etest.Body(i))},
			When: queue.At(f.plan.Due[i])}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := queue.New(f.b.rdb).ScheduleBatch(ctx, f.topic, items); err != nil {
		f.b.t.Fatalf("schedule the fair topic: %v", err)
	}
}

// check waits for every message of the fair topic, then fails the test if
// one was lost or early, more than bound arrived twice, or the first
// deliveries of one key in one slot came out of due order (docs/architecture.md,
// Guarantees 5: the order of a slot holds through a lost broker connection;
// the fair claim keeps due order within a key).
func (f *fairSide) check(t *testing.T, bound int) string {
	t.Helper()
	f.b.settle(f.plan, f.mq.Deliveries, false, 120*time.Second, f.topic)
	o := f.plan.Count(f.mq.Deliveries(), nil)
	o.Check(t)
	if o.Duplicates > bound {
		t.Errorf("fair topic: %d duplicates, more than %d", o.Duplicates, bound)
	}
	type keySlot struct {
		key  string
		slot int
	}
	last := map[keySlot]int{}
	seen := map[int]bool{}
	inversions := 0
	for _, d := range f.mq.Deliveries() {
		i := e2etest.Number(d.Body)
		if i < 0 || i >= f.plan.Len() || seen[i] {
			continue
		}
		seen[i] = true
		ks := keySlot{keyOf(i), f.topic.SlotOfID("f-" + strconv.Itoa(i))}
		if j, ok := last[ks]; ok && f.plan.Due[i].Before(f.plan.Due[j]) {
			if inversions < 5 {
				t.Errorf("fair topic: key %s slot %d: message %d (due %s) first delivered after %d (due %s)",
					ks.key, ks.slot, i, f.plan.Due[i].Format("15:04:05.000"), j, f.plan.Due[j].Format("15:04:05.000"))
			}
			inversions++
			continue
		}
		last[ks] = i
	}
	if inversions > 0 {
		t.Errorf("fair topic: %d messages first delivered after a later one of their key and slot", inversions)
	}
	return fmt.Sprintf("fair topic (%d keys): %d messages, %d delivered, %d duplicates, order within a key held: %t",
		fairKeys, o.Messages, o.Delivered, o.Duplicates, inversions == 0)
}

// expectDrained is bridge.expectDrained for the fair topic, its fair state
// (heads, waiting, ready, count) included: a key keeps state only while it
// has scheduled messages.
func (f *fairSide) expectDrained() {
	f.b.t.Helper()
	f.b.expectDrained(f.topic)
	ctx := context.Background()
	for slot := range f.topic.SlotCount() {
		k := f.topic.Keys(slot)
		for _, key := range []string{k.FairHeads, k.FairWaiting, k.FairReady, k.FairCount} {
			if n, err := f.b.rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
				f.b.t.Errorf("%s still exists after everything settled (%v)", key, err)
			}
		}
	}
}
