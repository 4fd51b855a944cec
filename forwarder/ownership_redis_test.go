package forwarder

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/faultproxy"
	"github.com/delaybridge/delaybridge/internal/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestReplicaCutOffFromRedisStopsScanningWithinTTL stalls the replica's
// connections to Redis (packets go nowhere, as in a network partition): the
// heartbeat cannot succeed, so the replica must give up its slots about one
// TTL later, when the others take them, and take them back once Redis
// answers again.
func TestReplicaCutOffFromRedisStopsScanningWithinTTL(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	opt := redistest.Options(t)
	proxy, err := faultproxy.New(context.Background(), opt.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	opt.Addr = proxy.Addr()
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })

	topic := queue.Topic{Name: "orders", Prefix: prefix, Slots: 8}
	m := NewMetrics(prometheus.NewRegistry())
	const ttl = 500 * time.Millisecond
	stop := start(t, Options{
		Queue: queue.New(rdb), Topics: []Topic{{topic, newRecordSink()}}, KeyPrefix: prefix,
		ReplicaID: "a", HeartbeatInterval: 100 * time.Millisecond, HeartbeatTTL: ttl, Metrics: m,
		ShutdownTimeout: time.Second,
	})
	owned := func() int {
		var g dto.Metric
		if err := m.Owned.WithLabelValues("orders").Write(&g); err != nil {
			t.Fatal(err)
		}
		return int(g.GetGauge().GetValue())
	}
	eventually(t, 10*time.Second, "owns all 8 slots", func() bool { return owned() == 8 })

	proxy.Stall()
	stalled := time.Now()
	// Before, a hung heartbeat waited interval + 5 s before it failed.
	eventually(t, 3*time.Second, "scanners stopped after the heartbeat was lost", func() bool { return owned() == 0 })
	t.Logf("stopped scanning %s after Redis stalled (TTL %s)", time.Since(stalled).Round(time.Millisecond), ttl)

	proxy.Restore()
	eventually(t, 15*time.Second, "owns all 8 slots again", func() bool { return owned() == 8 })
	if set, err := q.Heartbeat(context.Background(), prefix, "observer", time.Second); err != nil || len(set.Live) != 2 {
		t.Errorf("replica set %v, %v: want a and the observer", set.Live, err)
	}
	if err := stop(); err != nil {
		t.Errorf("run: %v", err)
	}
}
