package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// slotMessages are the messages of one slot, one per operation tried on it.
type slotMessages struct {
	ack, release, dead, retry, cancel, reschedule queue.Message
}

// messagesPerSlot finds, for every slot of t, six messages that land in it.
func messagesPerSlot(t queue.Topic) []slotMessages {
	found := make([][]queue.Message, t.SlotCount())
	left := t.SlotCount()
	for i := 0; left > 0; i++ {
		var m queue.Message
		var slot int
		if t.Format == queue.FormatEnvelope {
			m = queue.Message{ID: fmt.Sprintf("id-%d", i), Body: []byte(fmt.Sprintf("body %d", i)), Headers: map[string]string{"n": fmt.Sprint(i)}}
			slot = t.SlotOfID(m.ID)
		} else {
			m = queue.Message{Body: []byte(fmt.Sprintf("member %d", i))}
			slot = t.SlotOf(m.Body)
		}
		if len(found[slot]) < 6 {
			found[slot] = append(found[slot], m)
			if len(found[slot]) == 6 {
				left--
			}
		}
	}
	out := make([]slotMessages, len(found))
	for s, f := range found {
		out[s] = slotMessages{f[0], f[1], f[2], f[3], f[4], f[5]}
	}
	return out
}

// ref names m on t: by id on envelope topics, else by member.
func ref(t queue.Topic, m queue.Message) queue.Ref {
	if t.Format == queue.FormatEnvelope {
		return queue.ByID(m.ID)
	}
	return queue.ByMember(m.Body)
}

// exercise runs every operation of the queue package on every slot of t and
// returns every error (a CROSSSLOT among them would name the keys).
func exercise(ctx context.Context, q *queue.Queue, t queue.Topic) []error {
	var errs []error
	fail := func(slot int, op string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("topic %s slot %d: %s: %w", t.Name, slot, op, err))
		}
	}
	want := func(slot int, op string, got, exp any) {
		if got != exp {
			errs = append(errs, fmt.Errorf("topic %s slot %d: %s gave %v, want %v", t.Name, slot, op, got, exp))
		}
	}
	per := messagesPerSlot(t)
	past := queue.At(time.Now().Add(-time.Second))
	var items []queue.Item
	for _, m := range per {
		items = append(items,
			queue.Item{Message: m.ack, When: past},
			queue.Item{Message: m.release, When: past},
			queue.Item{Message: m.dead, When: past},
			queue.Item{Message: m.retry, When: past},
			queue.Item{Message: m.cancel, When: queue.In(time.Hour)})
	}
	_, err := q.ScheduleBatch(ctx, t, items) // pipelined over every master
	fail(-1, "schedule batch", err)
	for s, m := range per {
		_, err := q.Schedule(ctx, t, m.reschedule, queue.In(time.Hour))
		fail(s, "schedule", err)
	}

	for s, m := range per {
		c, err := q.Claim(ctx, t, s, 10, time.Minute)
		fail(s, "claim", err)
		want(s, "claim", len(c.Messages), 4)
		member := func(msg queue.Message) string {
			b, _ := t.Encode(msg)
			return string(b)
		}
		n, err := q.Ack(ctx, t, s, []string{member(m.ack)})
		fail(s, "ack", err)
		want(s, "ack", n, 1)
		n, err = q.Release(ctx, t, s, []string{member(m.release)})
		fail(s, "release", err)
		want(s, "release", n, 1)
		out, err := q.Retry(ctx, t, s, queue.Failure{Member: member(m.dead), Permanent: true, Reason: "refused"}, 10)
		fail(s, "retry (permanent)", err)
		want(s, "retry (permanent)", out, queue.Dead)
		out, err = q.Retry(ctx, t, s, queue.Failure{Member: member(m.retry), Reason: "nack"}, 10)
		fail(s, "retry", err)
		want(s, "retry", out, queue.Retrying)
		// The released and the retried one, with a lease that expires at once.
		c, err = q.Claim(ctx, t, s, 10, time.Millisecond)
		fail(s, "claim again", err)
		want(s, "claim again", len(c.Messages), 2)
	}
	time.Sleep(20 * time.Millisecond)
	for s, m := range per {
		r, err := q.Reap(ctx, t, s, 100, "0")
		fail(s, "reap", err)
		want(s, "reap", r.Reaped, 2)
		st, err := q.Stats(ctx, t, s)
		fail(s, "stats", err)
		want(s, "stats scheduled", st.Scheduled, int64(4))
		want(s, "stats dead", st.Dead, int64(1))
		var ok bool
		if t.Format == queue.FormatEnvelope {
			ok, err = q.CancelID(ctx, t, m.cancel.ID)
			fail(s, "cancel id", err)
			_, err = q.Get(ctx, t, m.reschedule.ID)
			fail(s, "get", err)
		} else {
			ok, err = q.Cancel(ctx, t, m.cancel.Body)
			fail(s, "cancel", err)
		}
		want(s, "cancel", ok, true)
		_, err = q.Reschedule(ctx, t, ref(t, m.reschedule), queue.In(2*time.Hour))
		fail(s, "reschedule", err)
	}
	_, err = q.TopicStats(ctx, t)
	fail(-1, "topic stats", err)

	dead, err := q.DeadList(ctx, t, queue.AllSlots, 0)
	fail(-1, "dead list", err)
	want(-1, "dead list", len(dead), t.SlotCount())
	n, err := q.DeadCount(ctx, t)
	fail(-1, "dead count", err)
	want(-1, "dead count", n, int64(t.SlotCount()))
	_, err = q.DeadFind(ctx, t, ref(t, per[0].dead))
	fail(0, "dead find", err)
	_, err = q.Requeue(ctx, t, ref(t, per[0].dead))
	fail(0, "requeue one", err)
	_, err = q.Requeue(ctx, t, queue.Ref{All: true})
	fail(-1, "requeue all", err)
	_, err = q.Purge(ctx, t, queue.Ref{All: true})
	fail(-1, "purge all", err)
	return errs
}

func TestRedisClusterNeverSeesCrossSlotWithManyTopicsAndSlots(t *testing.T) {
	t.Parallel()
	name := e2etest.Unique(t)
	b := redisCluster(t, name)
	ctx := context.Background()
	q := queue.New(b.rdb)
	t.Cleanup(func() { e2etest.DeleteKeys(b.rdb, "{"+name) }) // adopted keys: {<name>-legacy}:inflight, …

	// The cluster does refuse a script over two hash tags: what this test
	// runs would fail the same way if a script touched two slots' keys.
	err := b.rdb.Eval(ctx, "return redis.call('EXISTS', KEYS[1], KEYS[2])", []string{"{" + name + ":0}", "{" + name + ":1}"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("a script over two hash tags gave %v, want a CROSSSLOT error", err)
	}

	var topics []queue.Topic
	for i := range 5 {
		tp := queue.Topic{Name: fmt.Sprintf("topic%d", i), Prefix: name, Slots: 64}
		if i%2 == 1 {
			tp.Format = queue.FormatEnvelope
		}
		topics = append(topics, tp)
	}
	topics = append(topics,
		queue.Topic{Name: "legacy", Prefix: name, Key: name + "-legacy"},
		queue.Topic{Name: "tagged", Prefix: name, Key: "{" + name + "-tagged}:delayqueue"})

	var errs []error
	for _, tp := range topics {
		errs = append(errs, exercise(ctx, q, tp)...)
	}
	for i := range 5 {
		id := fmt.Sprintf("replica-%d", i)
		_, err := membership.New(q).Heartbeat(ctx, name, id, time.Second)
		errs = append(errs, err)
		_, err = membership.New(q).Leave(ctx, name, id)
		errs = append(errs, err)
	}
	crossSlot := 0
	for _, err := range errs {
		if err == nil {
			continue
		}
		if strings.Contains(err.Error(), "CROSSSLOT") || strings.Contains(err.Error(), "same slot") {
			crossSlot++
		}
		t.Error(err)
	}
	if crossSlot > 0 {
		t.Errorf("%d calls failed with CROSSSLOT", crossSlot)
	}

	// The slots of the topics live on every master.
	perMaster := e2etest.KeysPerMaster(t, b.rdb, name)
	for addr := range e2etest.Masters(t, b.rdb) {
		if len(perMaster[addr]) == 0 {
			t.Errorf("master %s holds none of %d topics × 64 slots", addr, 5)
		}
	}
}
