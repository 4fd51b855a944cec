package queue

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func layouts(prefix string) []Layout {
	orders := LayoutOf(Topic{Name: "orders", Prefix: prefix, Slots: 8, Format: FormatEnvelope})
	orders.Sink, orders.Exchange, orders.RoutingKey = "amqp", "events", "orders"
	legacy := LayoutOf(Topic{Name: "legacy", Prefix: prefix, Key: prefix + ":delayqueue"})
	legacy.Sink, legacy.KafkaTopic = "kafka", "legacy-due"
	return []Layout{orders, legacy}
}

func TestRegistryRoundTrip(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	prefix := f.tp.Prefix
	want := layouts(prefix)
	changes, err := f.q.Register(f.ctx, prefix, "a", want)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if len(changes) != 2 || changes[0].Replaced || changes[1].Replaced {
		t.Fatalf("changes = %+v, want two new topics", changes)
	}
	got, err := f.q.Layouts(f.ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Layout{want[1], want[0]}, got); diff != "" {
		t.Errorf("Layouts (-want +got):\n%s", diff)
	}
	doc := f.rdb.HGet(f.ctx, TopicsKey(prefix), "orders").Val()
	if !strings.Contains(doc, `"version":1`) || !strings.Contains(doc, `"exchange":"events"`) {
		t.Errorf("stored document %s lacks the version or the destination", doc)
	}
	tp, err := f.q.Topic(f.ctx, prefix, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Topic{Name: "orders", Prefix: prefix, Slots: 8, Format: FormatEnvelope}, tp); diff != "" {
		t.Errorf("Topic (-want +got):\n%s", diff)
	}
	all, err := f.q.Topics(f.ctx, prefix)
	if err != nil || len(all) != 2 || all[0].Key != prefix+":delayqueue" {
		t.Errorf("Topics = %+v, %v", all, err)
	}
	if _, err := f.q.Topic(f.ctx, prefix, "nope"); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("Topic(nope) = %v, want ErrUnknownTopic", err)
	}
	// The same layouts again change nothing; a daemon of one topic leaves
	// the other alone.
	if changes, err := f.q.Register(f.ctx, prefix, "a", want[:1]); err != nil || len(changes) != 0 {
		t.Errorf("Register again = %+v, %v; want no change", changes, err)
	}
	if n := f.rdb.HLen(f.ctx, TopicsKey(prefix)).Val(); n != 2 {
		t.Errorf("registry holds %d topics, want 2", n)
	}
}
