package forwarder

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// waitingTicks counts the tick members in the slots' scheduled sets.
func waitingTicks(t *testing.T, q *queue.Queue, topic queue.Topic) int {
	t.Helper()
	n := 0
	for slot := range topic.SlotCount() {
		ms, err := q.Client().ZRange(context.Background(), topic.Keys(slot).Scheduled, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if queue.IsTick(m) {
				n++
			}
		}
	}
	return n
}

// Replacing a recurrence again and again while its ticks are claimed and
// acknowledged never leaves two ticks waiting, and remove stops it.
func TestReplaceRacingInFlightTicksNeverDoublesOrResurrects(t *testing.T) {
	q, prefix := testRedis(t)
	topic := queue.Topic{Name: "racing", Prefix: prefix, Slots: 2}
	sink := newRecordSink()
	sink.set(func(s *recordSink) { s.delay = 30 * time.Millisecond }) // ticks stay in flight a while
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, ReplicaID: "r0"})
	ctx := context.Background()
	r := queue.Recurrence{ID: "r", Spec: "@every 1s", Message: queue.Message{Body: []byte("tick")}}
	begin := time.Now()
	for time.Since(begin) < 6*time.Second {
		if _, err := q.SetRecurrence(ctx, topic, r); err != nil {
			t.Fatal(err)
		}
		if n := waitingTicks(t, q, topic); n > 1 {
			t.Fatalf("%d ticks waiting after a replace, want 1", n)
		}
		time.Sleep(time.Duration(180+time.Now().UnixNano()%60) * time.Millisecond)
	}
	if _, err := q.RemoveRecurrence(ctx, topic, "r"); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	time.Sleep(2 * time.Second)
	seen := map[string]bool{}
	for _, p := range sink.published() {
		if p.msg.Due.After(removed.Add(time.Second)) {
			t.Errorf("tick due %s after the remove delivered", p.msg.Due.Sub(removed))
		}
		seen[p.msg.ID] = true
	}
	if len(seen) < 4 {
		t.Errorf("%d ticks delivered while replacing, want some: the race was not exercised", len(seen))
	}
	if n := waitingTicks(t, q, topic); n != 0 {
		t.Errorf("%d ticks left after remove", n)
	}
}

// A tick the broker refuses for good is dead-lettered, and the recurrence
// goes on.
func TestDeadTickDoesNotStopTheRecurrence(t *testing.T) {
	q, prefix := testRedis(t)
	topic := queue.Topic{Name: "refused", Prefix: prefix}
	sink := newRecordSink()
	refused := 0
	sink.set(func(s *recordSink) {
		s.fail = func(m sinks.Message) error {
			if refused < 2 {
				refused++
				return sinks.Permanent(errors.New("refused"))
			}
			return nil
		}
	})
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, ReplicaID: "r0"})
	r := queue.Recurrence{ID: "r", Spec: "@every 1s", Message: queue.Message{Body: []byte("tick")}}
	if _, err := q.SetRecurrence(context.Background(), topic, r); err != nil {
		t.Fatal(err)
	}
	eventually(t, 8*time.Second, "two ticks delivered after two refused", func() bool { return len(sink.published()) >= 2 })
	got := sink.published()
	if d := got[1].msg.Due.Sub(got[0].msg.Due); d != time.Second {
		t.Errorf("delivered ticks %s apart, want 1s", d)
	}
	if n, _ := q.Client().ZCard(context.Background(), topic.Keys(0).Dead).Result(); n != 2 {
		t.Errorf("dead set holds %d, want the 2 refused ticks", n)
	}
}

// A tick the broker refuses is retried while its recurrence waits (one tick
// per recurrence, always); when its last attempt fails it dies and the
// recurrence goes on.
func TestRetriedTickHoldsItsRecurrenceAndItsDeathReleasesIt(t *testing.T) {
	q, prefix := testRedis(t)
	topic := queue.Topic{Name: "nacked", Prefix: prefix}
	sink := newRecordSink()
	refused := 0
	sink.set(func(s *recordSink) {
		s.fail = func(m sinks.Message) error {
			if refused < 2 {
				refused++
				return errors.New("nack")
			}
			return nil
		}
	})
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, ReplicaID: "r0",
		MaxAttempts: 2, RetryBackoff: 1500 * time.Millisecond})
	r := queue.Recurrence{ID: "r", Spec: "@every 1s", Message: queue.Message{Body: []byte("tick")}}
	if _, err := q.SetRecurrence(context.Background(), topic, r); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(sink.published()) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no two ticks delivered after the refused one died")
		}
		if n := waitingTicks(t, q, topic); n > 1 {
			t.Fatalf("%d ticks waiting while one retries, want 1", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := sink.published()
	if d := got[1].msg.Due.Sub(got[0].msg.Due); d != time.Second {
		t.Errorf("delivered ticks %s apart, want 1s", d)
	}
	if n, _ := q.Client().ZCard(context.Background(), topic.Keys(0).Dead).Result(); n != 1 {
		t.Errorf("dead set holds %d, want the tick that failed twice", n)
	}
}

// Without keyspace notifications and with a poll far longer than the
// period, each tick is still on time: the scanner that writes the next tick
// wakes itself for it (no PUBLISH, which the daemon's ACL lacks).
func TestNextTickWakesItsScannerWithoutNotifications(t *testing.T) {
	q, prefix := testRedis(t)
	topic := queue.Topic{Name: "polled", Prefix: prefix, Slots: 2}
	sink := newRecordSink()
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, ReplicaID: "r0",
		KeyspaceEvents: "off", PollInterval: 10 * time.Second})
	// The first tick of each recurrence is announced by SetRecurrence's
	// wake-up; one published before the forwarder listens is lost (a lost
	// wake-up costs up to the poll interval, here 10 s, wake.go), which is
	// not what this test measures: set them once it listens.
	wake := queue.WakeChannel(prefix)
	eventually(t, 10*time.Second, "the forwarder listening for wake-ups", func() bool {
		n, err := q.Client().PubSubNumSub(context.Background(), wake).Result()
		return err == nil && n[wake] > 0
	})
	for _, id := range []string{"a", "b", "c"} {
		r := queue.Recurrence{ID: id, Spec: "@every 1s", Message: queue.Message{Body: []byte(id)}}
		if _, err := q.SetRecurrence(context.Background(), topic, r); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(6 * time.Second)
	got := sink.published()
	var worst time.Duration
	for _, p := range got {
		worst = max(worst, p.at.Sub(p.msg.Due))
	}
	t.Logf("%d ticks, latest %s late", len(got), worst)
	if len(got) < 12 || worst > 500*time.Millisecond {
		t.Errorf("%d ticks in 6 s, the latest %s late; want at least 12, none 500 ms late", len(got), worst)
	}
}
