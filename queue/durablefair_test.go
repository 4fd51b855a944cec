package queue_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	. "github.com/delaybridge/delaybridge/queue"
)

// TestDurableAcceptanceOnAFairTopic: WAIT acceptance holds on a fair topic
// as on any other: acknowledged messages are on the replica with their
// keys' entries, and once too few replicas are in step a schedule is
// refused and writes nothing, neither the message nor its fair state; a
// claim on the master still serves the keys in turn.
func TestDurableAcceptanceOnAFairTopic(t *testing.T) {
	f := newDurableFixture(t)
	f.tp.Fair = true
	items := make([]Item, 20)
	for i := range items {
		items[i] = Item{Message: Message{ID: fmt.Sprintf("m-%02d", i), Key: fmt.Sprintf("k%d", i%2), Body: []byte("x")}, When: In(time.Hour)}
	}
	if _, err := f.q.ScheduleBatch(f.ctx, f.tp, items); err != nil {
		t.Fatalf("batch with the replica in step: %v", err)
	}
	if got := f.scheduledOn(t, f.repl); got != 20 {
		t.Fatalf("the replica has %d scheduled members right after the acknowledgement, want 20", got)
	}
	heads := func() int64 {
		var n int64
		for slot := range f.tp.Slots {
			n += f.master.ZCard(f.ctx, f.tp.Keys(slot).FairHeads).Val()
		}
		return n
	}
	if n := heads(); n != 20 {
		t.Fatalf("the fair index holds %d entries, want 20", n)
	}
	f.r.Link.Stall()
	e2etest.WaitFor(t, 10*time.Second, "acceptance to stop", func() bool {
		return errors.Is(f.q.Acceptance(f.ctx).Err, ErrTooFewReplicas)
	})
	_, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "refused", Key: "k9", Body: []byte("x")}, In(time.Hour))
	if !errors.Is(err, ErrTooFewReplicas) {
		t.Fatalf("schedule with too few replicas: err %v, want ErrTooFewReplicas", err)
	}
	if got, n := f.scheduledOn(t, f.master), heads(); got != 20 || n != 20 {
		t.Errorf("a refused schedule wrote: %d scheduled, %d fair entries; want 20 and 20", got, n)
	}
	f.r.Link.Restore()
}
