package forwarder

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
)

func TestBacklogGaugesCountStatesAndTheOldestOverdueAge(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	ctx := context.Background()
	rdb := q.Client()
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	ago := func(d time.Duration) float64 { return float64(now.Add(-d).UnixMilli()) }
	orders := queue.Topic{Name: "orders", Prefix: prefix, Slots: 2}
	idle := queue.Topic{Name: "idle", Prefix: prefix}
	s0, s1 := orders.Keys(0), orders.Keys(1)
	rdb.ZAdd(ctx, s0.Scheduled,
		redis.Z{Score: ago(90 * time.Second), Member: "oldest"},
		redis.Z{Score: ago(10 * time.Second), Member: "late"},
		redis.Z{Score: ago(-time.Hour), Member: "future"},
		redis.Z{Score: ago(-time.Minute), Member: "retry"})
	rdb.HSet(ctx, s0.Attempts, "retry", 2, "claimed", 1)
	rdb.ZAdd(ctx, s0.Inflight, redis.Z{Score: ago(-time.Minute), Member: "claimed"})
	rdb.ZAdd(ctx, s0.Dead, redis.Z{Score: ago(time.Hour), Member: "poison"})
	rdb.ZAdd(ctx, s1.Scheduled, redis.Z{Score: ago(30 * time.Second), Member: "other"})

	reg := prometheus.NewRegistry()
	sink := newRecordSink()
	f, err := New(Options{
		Queue:   q,
		Topics:  []Topic{{Topic: orders, Sink: sink}, {Topic: idle, Sink: sink}},
		Metrics: NewMetrics(reg),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.owned = map[slotKey]*running{{0, 0}: {}, {0, 1}: {}, {1, 0}: {}}
	if p := f.backlog.runOnce(ctx); p.err != nil || p.done != 3 {
		t.Fatalf("pass read %d slots (%v), want the 3 owned", p.done, p.err)
	}

	got := gatherSeries(t, reg)
	age := got[`delaybridge_oldest_overdue_seconds{topic="orders"}`]
	if age < 89 || age > 95 {
		t.Errorf("oldest overdue of orders = %vs, want about 90s (the max over its slots)", age)
	}
	want := map[string]float64{
		`delaybridge_backlog_messages{state="scheduled",topic="orders"}`: 5,
		`delaybridge_backlog_messages{state="overdue",topic="orders"}`:   3,
		`delaybridge_backlog_messages{state="retrying",topic="orders"}`:  1,
		`delaybridge_backlog_messages{state="inflight",topic="orders"}`:  1,
		`delaybridge_backlog_messages{state="dead",topic="orders"}`:      1,
		`delaybridge_backlog_messages{state="scheduled",topic="idle"}`:   0,
		`delaybridge_backlog_messages{state="overdue",topic="idle"}`:     0,
		`delaybridge_backlog_messages{state="retrying",topic="idle"}`:    0,
		`delaybridge_backlog_messages{state="inflight",topic="idle"}`:    0,
		`delaybridge_backlog_messages{state="dead",topic="idle"}`:        0,
		`delaybridge_oldest_overdue_seconds{topic="idle"}`:               0,
	}
	gotSome := map[string]float64{}
	for k := range want {
		gotSome[k] = got[k]
	}
	if diff := cmp.Diff(want, gotSome); diff != "" {
		t.Errorf("backlog gauges (-want +got):\n%s", diff)
	}
}

func TestTopicPausedGaugeIsOneWhilePausedOnOwnersAndOthers(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	ctx := context.Background()
	orders := queue.Topic{Name: "orders", Prefix: prefix, Slots: 2}
	other := queue.Topic{Name: "other", Prefix: prefix}
	reg := prometheus.NewRegistry()
	sink := newRecordSink()
	f, err := New(Options{Queue: q, Topics: []Topic{{Topic: orders, Sink: sink}, {Topic: other, Sink: sink}}, Metrics: NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	f.owned = map[slotKey]*running{{0, 1}: {}} // owns a slot of orders, none of other
	gauges := func() (float64, float64) {
		got := gatherSeries(t, reg)
		return got[`delaybridge_topic_paused{topic="orders"}`], got[`delaybridge_topic_paused{topic="other"}`]
	}
	f.backlog.runOnce(ctx)
	if o, x := gauges(); o != 0 || x != 0 {
		t.Fatalf("before pause: orders %v, other %v; want 0, 0", o, x)
	}
	for _, tp := range []queue.Topic{orders, other} {
		if err := q.Pause(ctx, tp, "test"); err != nil {
			t.Fatal(err)
		}
	}
	f.backlog.runOnce(ctx)
	if o, x := gauges(); o != 1 || x != 1 {
		t.Errorf("paused: orders %v, other %v; want 1, 1", o, x)
	}
	q.Resume(ctx, orders)
	f.backlog.runOnce(ctx)
	if o, x := gauges(); o != 0 || x != 1 {
		t.Errorf("orders resumed: orders %v, other %v; want 0, 1", o, x)
	}
}
