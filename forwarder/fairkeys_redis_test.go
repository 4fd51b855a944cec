package forwarder

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/queue"
)

func TestFairKeysGaugeCountsKeysWithMessagesInTheOwnedSlots(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	ctx := context.Background()
	fair := queue.Topic{Name: "fair", Prefix: prefix, Slots: 1, Format: queue.FormatEnvelope, Fair: true}
	plain := queue.Topic{Name: "plain", Prefix: prefix, Slots: 1, Format: queue.FormatEnvelope}
	var items []queue.Item
	for i := range 7 {
		k := fmt.Sprintf("tenant-%d", i%3) // 3 keys
		items = append(items, queue.Item{Message: queue.Message{ID: fmt.Sprint("m", i), Key: k, Body: []byte("x")}, When: queue.In(time.Hour)})
	}
	for _, tp := range []queue.Topic{fair, plain} {
		if _, err := q.ScheduleBatch(ctx, tp, items); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	sink := newRecordSink()
	f, err := New(Options{Queue: q, Topics: []Topic{{Topic: fair, Sink: sink}, {Topic: plain, Sink: sink}}, Metrics: NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	f.owned = map[slotKey]*running{{0, 0}: {}, {1, 0}: {}}
	f.backlog.runOnce(ctx)
	got := gatherSeries(t, reg)
	if g := got[`delaybridge_fair_keys{topic="fair"}`]; g != 3 {
		t.Errorf("fair_keys of the fair topic = %v, want 3", g)
	}
	if g, ok := got[`delaybridge_fair_keys{topic="plain"}`]; !ok || g != 0 {
		t.Errorf("fair_keys of a plain topic = %v (present %t), want 0", g, ok)
	}
}
