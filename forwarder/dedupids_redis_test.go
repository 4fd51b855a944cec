package forwarder

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/queue"
)

// TestDedupIDsGaugeCountsTheRememberedIDs: delaybridge_dedup_ids{topic}
// (and the slot's stats) count the ids a topic with a dedup window
// remembers once their messages were acked; a topic without one shows 0.
// Before, the remembered ids showed nowhere.
func TestDedupIDsGaugeCountsTheRememberedIDs(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	ctx := context.Background()
	dedup := queue.Topic{Name: "dedup", Prefix: prefix, Slots: 1, Format: queue.FormatEnvelope, DedupWindow: time.Hour}
	plain := queue.Topic{Name: "plain", Prefix: prefix, Slots: 1, Format: queue.FormatEnvelope}
	for _, tp := range []queue.Topic{dedup, plain} {
		var items []queue.Item
		for i := range 5 {
			items = append(items, queue.Item{Message: queue.Message{ID: fmt.Sprint("m", i), Body: []byte("x")}})
		}
		if _, err := q.ScheduleBatch(ctx, tp, items); err != nil {
			t.Fatal(err)
		}
		c, err := q.Claim(ctx, tp, 0, 10, time.Minute)
		if err != nil || len(c.Messages) != 5 {
			t.Fatalf("claim %s: %d messages, %v; want 5", tp.Name, len(c.Messages), err)
		}
		members := make([]string, len(c.Messages))
		for i, m := range c.Messages {
			members[i] = m.Member
		}
		if n, err := q.Ack(ctx, tp, 0, members); err != nil || n != 5 {
			t.Fatalf("ack %s: %d, %v", tp.Name, n, err)
		}
	}
	if st, err := q.Stats(ctx, dedup, 0); err != nil || st.DedupIDs != 5 {
		t.Fatalf("stats of the dedup topic: DedupIDs %d, %v; want 5", st.DedupIDs, err)
	}
	reg := prometheus.NewRegistry()
	sink := newRecordSink()
	f, err := New(Options{Queue: q, Topics: []Topic{{Topic: dedup, Sink: sink}, {Topic: plain, Sink: sink}}, Metrics: NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	f.owned = map[slotKey]*running{{0, 0}: {}, {1, 0}: {}}
	f.backlog.runOnce(ctx)
	got := gatherSeries(t, reg)
	if g := got[`delaybridge_dedup_ids{topic="dedup"}`]; g != 5 {
		t.Errorf("dedup_ids of the topic with a window = %v, want 5", g)
	}
	if g, ok := got[`delaybridge_dedup_ids{topic="plain"}`]; !ok || g != 0 {
		t.Errorf("dedup_ids of a topic without a window = %v (present %t), want 0", g, ok)
	}
}
