package forwarder

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/delaybridge/delaybridge/queue"
)

// TestPausedGaugeFollowsPauseWithinASecond: with the default
// BacklogInterval (10 s), topic_paused read 0 for up to 9 s after pause.
func TestPausedGaugeFollowsPauseWithinASecond(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	topic := queue.Topic{Name: "orders", Prefix: prefix, Slots: 2}
	m := NewMetrics(prometheus.NewRegistry())
	start(t, Options{Queue: q, KeyPrefix: prefix, ReplicaID: "r1", Topics: []Topic{{Topic: topic, Sink: newRecordSink()}}, Metrics: m})
	gauge := func() float64 { return testutil.ToFloat64(m.Paused.WithLabelValues("orders")) }
	time.Sleep(1500 * time.Millisecond) // the first backlog refresh is done: the next is 10 s away
	if err := q.Pause(context.Background(), topic, "test"); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	eventually(t, 2500*time.Millisecond, "topic_paused at 1 within ~1 s of pause", func() bool { return gauge() == 1 })
	t.Logf("gauge at 1 %s after pause", time.Since(paused).Round(time.Millisecond))
}
