package queue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// dedupTopic is an envelope topic of one slot with a dedup window, on a
// fresh prefix of the shared Redis.
func dedupTopic(t *testing.T, window time.Duration) (context.Context, *redis.Client, *queue.Queue, queue.Topic) {
	t.Helper()
	rdb, prefix := redistest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx, rdb, queue.New(rdb), queue.Topic{Name: "dedup", Prefix: prefix, Slots: 1, Format: queue.FormatEnvelope, DedupWindow: window}
}

// deliver schedules the ids due now, claims them and acks them, as the
// forwarder does once the broker confirmed them.
func deliver(t *testing.T, ctx context.Context, q *queue.Queue, tp queue.Topic, ids ...string) {
	t.Helper()
	items := make([]queue.Item, len(ids))
	for i, id := range ids {
		items[i] = queue.Item{Message: queue.Message{ID: id, Body: []byte("body of " + id)}, When: queue.In(-time.Second)}
	}
	if _, err := q.ScheduleBatch(ctx, tp, items); err != nil {
		t.Fatalf("ScheduleBatch: %v", err)
	}
	c, err := q.Claim(ctx, tp, 0, len(ids)+1, time.Minute)
	if err != nil || len(c.Messages) != len(ids) {
		t.Fatalf("Claim = %d messages, %v; want %d", len(c.Messages), err, len(ids))
	}
	ms := make([]string, len(c.Messages))
	for i, m := range c.Messages {
		ms[i] = m.Member
	}
	if n, err := q.Ack(ctx, tp, 0, ms); err != nil || n != len(ms) {
		t.Fatalf("Ack = %d, %v; want %d", n, err, len(ms))
	}
}

// TestDeliveredIDIsADuplicateWithinTheWindow: an id acked on a topic with a
// dedup window is known for the window: scheduling it again (alone or in a
// batch) is a duplicate that writes nothing, cancel and reschedule do not
// find it; once the window passed, it is scheduled again.
func TestDeliveredIDIsADuplicateWithinTheWindow(t *testing.T) {
	t.Parallel()
	const window = 700 * time.Millisecond
	ctx, rdb, q, tp := dedupTopic(t, window)
	k := tp.Keys(0)
	deliver(t, ctx, q, tp, "a")
	ackedAt := time.Now()
	until, err := rdb.ZScore(ctx, k.Delivered, "a").Result()
	if err != nil {
		t.Fatalf("the acked id is not in %s: %v", k.Delivered, err)
	}
	now, _ := rdb.Time(ctx).Result()
	if d := time.Duration(until-float64(now.UnixMilli())) * time.Millisecond; d <= 0 || d > window {
		t.Errorf("the id is known for %v more; want (0, %v]", d, window)
	}

	r, err := q.Schedule(ctx, tp, queue.Message{ID: "a", Body: []byte("retry")}, queue.In(0))
	if err != nil || !r.Duplicate || r.Replaced != queue.ReplacedNothing {
		t.Fatalf("Schedule of a delivered id = %+v, %v; want a duplicate", r, err)
	}
	rs, err := q.ScheduleBatch(ctx, tp, []queue.Item{
		{Message: queue.Message{ID: "a", Body: []byte("retry")}, When: queue.In(time.Hour)},
		{Message: queue.Message{ID: "b", Body: []byte("new")}, When: queue.In(time.Hour)},
	})
	if err != nil || !rs[0].Duplicate || rs[1].Duplicate {
		t.Fatalf("ScheduleBatch = %+v, %v; want a duplicate, then a new message", rs, err)
	}
	if n := rdb.ZCard(ctx, k.Scheduled).Val(); n != 1 {
		t.Errorf("%d scheduled; want 1 (b alone): a duplicate wrote something", n)
	}
	if ok, err := q.CancelID(ctx, tp, "a"); ok || err != nil {
		t.Errorf("CancelID of a remembered id = %v, %v; want not found", ok, err)
	}
	if _, err := q.Reschedule(ctx, tp, queue.ByID("a"), queue.In(time.Hour)); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("Reschedule of a remembered id: %v; want ErrNotFound", err)
	}

	time.Sleep(time.Until(ackedAt.Add(window + 50*time.Millisecond)))
	r, err = q.Schedule(ctx, tp, queue.Message{ID: "a", Body: []byte("later")}, queue.In(time.Hour))
	if err != nil || r.Duplicate {
		t.Fatalf("Schedule after the window = %+v, %v; want it scheduled", r, err)
	}
	if n := rdb.ZCard(ctx, k.Scheduled).Val(); n != 2 {
		t.Errorf("%d scheduled after the window; want 2", n)
	}
	if err := rdb.ZScore(ctx, k.Delivered, "a").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("the expired entry stayed in %s (%v); the schedule drops it", k.Delivered, err)
	}
}

// TestNoWindowRemembersNothing: without a window (the default) an ack
// writes no delivered set and a retry is scheduled again, as before.
func TestNoWindowRemembersNothing(t *testing.T) {
	t.Parallel()
	ctx, rdb, q, tp := dedupTopic(t, 0)
	deliver(t, ctx, q, tp, "a")
	if n := rdb.Exists(ctx, tp.Keys(0).Delivered).Val(); n != 0 {
		t.Errorf("an ack without a window wrote %s", tp.Keys(0).Delivered)
	}
	r, err := q.Schedule(ctx, tp, queue.Message{ID: "a", Body: []byte("retry")}, queue.In(time.Hour))
	if err != nil || r.Duplicate {
		t.Fatalf("Schedule = %+v, %v; want it scheduled", r, err)
	}
}

// TestAckTrimsExpiredEntriesBoundedly: each ack removes at most 2k+1
// expired entries for the k ids it remembers, the oldest first, and never
// one still in its window: the set shrinks without a sweeper, and no ack
// costs more than its own size.
func TestAckTrimsExpiredEntriesBoundedly(t *testing.T) {
	t.Parallel()
	ctx, rdb, q, tp := dedupTopic(t, time.Minute)
	k := tp.Keys(0)
	now, _ := rdb.Time(ctx).Result()
	var zs []redis.Z
	for i := range 100 {
		zs = append(zs, redis.Z{Score: float64(now.UnixMilli() - 1000 + int64(i)), Member: fmt.Sprintf("old-%03d", i)})
	}
	zs = append(zs, redis.Z{Score: float64(now.UnixMilli() + 60_000), Member: "live"})
	if err := rdb.ZAdd(ctx, k.Delivered, zs...).Err(); err != nil {
		t.Fatal(err)
	}
	deliver(t, ctx, q, tp, "x", "y", "z")
	if n := rdb.ZCard(ctx, k.Delivered).Val(); n != 101-7+3 {
		t.Errorf("%d entries after an ack of 3; want %d (7 expired removed, 3 added)", n, 101-7+3)
	}
	if err := rdb.ZScore(ctx, k.Delivered, "old-006").Err(); !errors.Is(err, redis.Nil) {
		t.Error("the oldest expired entries were not the ones removed")
	}
	for _, id := range []string{"old-007", "live", "x"} {
		if err := rdb.ZScore(ctx, k.Delivered, id).Err(); err != nil {
			t.Errorf("%s left the set: %v", id, err)
		}
	}
}

// TestDeliveredMemoryPerID measures what a remembered id costs Redis: the
// delivered set's MEMORY USAGE over n ids of 36 bytes (a UUID), while it is
// a listpack (up to zset-max-listpack-entries, 128 by default) and beyond
// (a skiplist). docs/operations.md quotes these numbers.
func TestDeliveredMemoryPerID(t *testing.T) {
	t.Parallel()
	for _, n := range []int{100, 5000} {
		ctx, rdb, q, tp := dedupTopic(t, time.Hour)
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i*7919)
		}
		for c := 0; c < n; c += 1000 {
			deliver(t, ctx, q, tp, ids[c:min(c+1000, n)]...)
		}
		key := tp.Keys(0).Delivered
		if got := rdb.ZCard(ctx, key).Val(); got != int64(n) {
			t.Fatalf("%d remembered; want %d", got, n)
		}
		bytes, err := rdb.MemoryUsage(ctx, key, 0).Result()
		if err != nil {
			t.Fatalf("MEMORY USAGE %s: %v", key, err)
		}
		per := float64(bytes) / float64(n)
		enc := rdb.ObjectEncoding(ctx, key).Val()
		t.Logf("%d remembered ids (%s): %d bytes, %.1f B/id", n, enc, bytes, per)
		bound := 64.0
		if enc == "skiplist" {
			bound = 160
		}
		if per > bound {
			t.Errorf("%.1f B/id as a %s; want at most %.0f", per, enc, bound)
		}
	}
}

// TestAckOnAFullRedisStillAcksAndRemembers: the ack runs while Redis is at
// its maxmemory (guarantee 8): remembering an id is part of a script that
// frees more (the message) than it adds (the id), so the ack neither fails
// nor skips it; a schedule is refused as before (ErrRedisFull).
func TestAckOnAFullRedisStillAcksAndRemembers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := fullRedis(t, "noeviction")
	q := queue.New(rdb)
	tp := queue.Topic{Name: "full-dedup", Slots: 1, Format: queue.FormatEnvelope, DedupWindow: time.Hour}
	for i := range 4 {
		if _, err := q.Schedule(ctx, tp, message(tp.Format, fmt.Sprint(i)), queue.In(-time.Second)); err != nil {
			t.Fatalf("Schedule: %v", err)
		}
	}
	c, err := q.Claim(ctx, tp, 0, 4, time.Minute)
	if err != nil || len(c.Messages) != 4 {
		t.Fatalf("Claim = %d, %v", len(c.Messages), err)
	}
	e2etest.FillRedis(t, ctx, rdb)
	ms := []string{c.Messages[0].Member, c.Messages[1].Member}
	if n, err := q.Ack(ctx, tp, 0, ms); err != nil || n != 2 {
		t.Fatalf("Ack on a full Redis = %d, %v; want 2", n, err)
	}
	if n := rdb.ZCard(ctx, tp.Keys(0).Delivered).Val(); n != 2 {
		t.Errorf("%d ids remembered by the ack on a full Redis; want 2", n)
	}
	if _, err := q.Schedule(ctx, tp, message(tp.Format, "0"), queue.In(0)); !errors.Is(err, queue.ErrRedisFull) {
		t.Errorf("Schedule on a full Redis: %v; want ErrRedisFull", err)
	}
}

// TestDeadLetteredIDIsNotRemembered: only a delivery (an ack) is
// remembered: an id dead-lettered by a permanent failure leaves no entry,
// and scheduling it again schedules it.
func TestDeadLetteredIDIsNotRemembered(t *testing.T) {
	t.Parallel()
	ctx, rdb, q, tp := dedupTopic(t, time.Hour)
	if _, err := q.Schedule(ctx, tp, queue.Message{ID: "d", Body: []byte("x")}, queue.In(-time.Second)); err != nil {
		t.Fatal(err)
	}
	c, err := q.Claim(ctx, tp, 0, 1, time.Minute)
	if err != nil || len(c.Messages) != 1 {
		t.Fatalf("Claim = %d, %v", len(c.Messages), err)
	}
	if out, err := q.Retry(ctx, tp, 0, queue.Failure{Member: c.Messages[0].Member, Permanent: true, Reason: "refused"}, 3); err != nil || out != queue.Dead {
		t.Fatalf("Retry = %v, %v; want dead", out, err)
	}
	if n := rdb.Exists(ctx, tp.Keys(0).Delivered).Val(); n != 0 {
		t.Error("a dead-lettered id was remembered")
	}
	r, err := q.Schedule(ctx, tp, queue.Message{ID: "d", Body: []byte("again")}, queue.In(time.Hour))
	if err != nil || r.Duplicate {
		t.Fatalf("Schedule of a dead-lettered id = %+v, %v; want it scheduled", r, err)
	}
}
