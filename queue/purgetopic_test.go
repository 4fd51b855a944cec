package queue_test

import (
	"context"
	"slices"
	"testing"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestPurgeTopicDeletesOnlyThatTopicsKeys: topics whose names extend
// another's ("orders.eu", "orders-2"), and an adopted key, keep every key
// when "orders" is purged, and "orders" loses all of its own, the
// topic-wide ones and a slot beyond its count (left by a resize) included.
func TestPurgeTopicDeletesOnlyThatTopicsKeys(t *testing.T) {
	rdb, prefix := redistest.New(t)
	ctx := context.Background()
	orders := queue.Topic{Name: "orders", Prefix: prefix, Slots: 2, Format: queue.FormatEnvelope}
	own := []string{orders.Keys(0).Scheduled, orders.Keys(1).Dead, orders.Keys(1).IDs, orders.Keys(0).Delivered,
		orders.Keys(7).Scheduled, orders.FlowKeys().Limits}
	others := []string{
		queue.Topic{Name: "orders.eu", Prefix: prefix}.Keys(0).Scheduled,
		queue.Topic{Name: "orders-2", Prefix: prefix}.Keys(0).Inflight,
		queue.Topic{Name: "orders-2", Prefix: prefix}.FlowKeys().Bucket,
		prefix + ":orders", queue.TopicsKey(prefix),
	}
	adopted := queue.Topic{Name: "legacy", Key: prefix + "-delayqueue"}
	others = append(others, adopted.Keys(0).Scheduled, adopted.Keys(0).Dead)
	for _, k := range append(slices.Clone(own), others...) {
		if err := rdb.HSet(ctx, k, "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { rdb.Del(context.Background(), append(own, others...)...) })
	q := queue.New(rdb)
	got, err := q.TopicKeys(ctx, orders)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(own))
	if !slices.Equal(got, want) {
		t.Fatalf("TopicKeys(orders) = %q, want %q", got, want)
	}
	if n, err := q.PurgeTopic(ctx, orders); err != nil || n != len(own) {
		t.Fatalf("PurgeTopic = %d, %v; want %d", n, err, len(own))
	}
	for _, k := range others {
		if rdb.Exists(ctx, k).Val() != 1 {
			t.Errorf("purging orders deleted %s", k)
		}
	}
	got, err = q.TopicKeys(ctx, adopted)
	slices.Sort(got)
	if want := slices.Sorted(slices.Values([]string{adopted.Keys(0).Scheduled, adopted.Keys(0).Dead})); err != nil || !slices.Equal(got, want) {
		t.Errorf("TopicKeys(adopted) = %q, %v; want %q", got, err, want)
	}
}
