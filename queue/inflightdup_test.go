package queue_test

import (
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// TestRetryInFlightIsOneDelivery: on a topic with a dedup window, a
// schedule of an id that is claimed (being delivered, not yet acked) is a
// duplicate, alone or in a batch: nothing is written, the claim proceeds,
// and after its ack the id was delivered exactly once.
func TestRetryInFlightIsOneDelivery(t *testing.T) {
	t.Parallel()
	ctx, rdb, q, tp := dedupTopic(t, time.Hour)
	k := tp.Keys(0)
	if _, err := q.Schedule(ctx, tp, queue.Message{ID: "a", Body: []byte("first")}, queue.In(0)); err != nil {
		t.Fatal(err)
	}
	c, err := q.Claim(ctx, tp, 0, 10, time.Minute)
	if err != nil || len(c.Messages) != 1 {
		t.Fatalf("Claim = %d messages, %v; want 1", len(c.Messages), err)
	}
	r, err := q.Schedule(ctx, tp, queue.Message{ID: "a", Body: []byte("retry")}, queue.In(0))
	if err != nil || !r.Duplicate || r.Replaced != queue.ReplacedNothing {
		t.Fatalf("Schedule of an id in flight = %+v, %v; want a duplicate", r, err)
	}
	rs, err := q.ScheduleBatch(ctx, tp, []queue.Item{{Message: queue.Message{ID: "a", Body: []byte("retry")}, When: queue.In(0)}})
	if err != nil || !rs[0].Duplicate {
		t.Fatalf("ScheduleBatch of an id in flight = %+v, %v; want a duplicate", rs, err)
	}
	if n := rdb.ZCard(ctx, k.Scheduled).Val(); n != 0 {
		t.Errorf("%d scheduled; want 0: the retry in flight was written", n)
	}
	if n := rdb.ZCard(ctx, k.Inflight).Val(); n != 1 {
		t.Errorf("%d in flight; want 1: the first delivery must proceed", n)
	}
	if n, err := q.Ack(ctx, tp, 0, []string{c.Messages[0].Member}); err != nil || n != 1 {
		t.Fatalf("Ack = %d, %v; want 1", n, err)
	}
	again, err := q.Claim(ctx, tp, 0, 10, time.Minute)
	if err != nil || len(again.Messages) != 0 {
		t.Errorf("Claim after the ack = %d messages, %v; want none: one delivery in all", len(again.Messages), err)
	}
}

// TestRetryInFlightWithoutWindowReplaces: without a dedup window nothing
// changes: the id in flight is replaced (its delivery proceeds, the new
// message is delivered as well).
func TestRetryInFlightWithoutWindowReplaces(t *testing.T) {
	t.Parallel()
	ctx, _, q, tp := dedupTopic(t, 0)
	if _, err := q.Schedule(ctx, tp, queue.Message{ID: "a", Body: []byte("first")}, queue.In(0)); err != nil {
		t.Fatal(err)
	}
	if c, err := q.Claim(ctx, tp, 0, 10, time.Minute); err != nil || len(c.Messages) != 1 {
		t.Fatalf("Claim = %+v, %v; want 1 message", c, err)
	}
	r, err := q.Schedule(ctx, tp, queue.Message{ID: "a", Body: []byte("retry")}, queue.In(0))
	if err != nil || r.Duplicate || r.Replaced != queue.ReplacedInFlight {
		t.Fatalf("Schedule = %+v, %v; want it to replace the message in flight", r, err)
	}
}

// TestRegistryCarriesTheDedupWindow: the registry records a topic's dedup
// window, so a producer that knows the topic only from it (the HTTP API,
// the CLI) answers a retry in flight as a duplicate; a new window is taken
// over while a replica is live (it is no conflict of layouts).
func TestRegistryCarriesTheDedupWindow(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	ctx := t.Context()
	q := queue.New(rdb)
	tp := queue.Topic{Name: "once", Prefix: prefix, Format: queue.FormatEnvelope, DedupWindow: time.Hour}
	if _, err := q.Register(ctx, prefix, "a", []queue.Layout{queue.LayoutOf(tp)}); err != nil {
		t.Fatal(err)
	}
	if _, err := membership.New(q).Heartbeat(ctx, prefix, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	tp.DedupWindow = 2 * time.Hour
	changes, err := q.Register(ctx, prefix, "b", []queue.Layout{queue.LayoutOf(tp)})
	if err != nil || len(changes) != 1 || changes[0].Replaced {
		t.Fatalf("Register of a new window = %+v, %v; want one change, no conflict", changes, err)
	}
	got, err := q.Topic(ctx, prefix, "once")
	if err != nil || got.DedupWindow != 2*time.Hour {
		t.Errorf("registry's topic = %+v, %v; want a 2h window", got, err)
	}
}
