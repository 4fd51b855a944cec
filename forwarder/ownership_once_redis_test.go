package forwarder

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/membership"
)

// TestOwnershipRunOnceHeartbeatsAndAppliesTheLiveReplicas: one pass of the
// ownership service heartbeats, reports the topics this replica forwards,
// applies the live replicas once, and a second pass with no change applies
// nothing.
func TestOwnershipRunOnceHeartbeatsAndAppliesTheLiveReplicas(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	ctx := context.Background()
	var applied [][]string
	o, err := newOwnership(ownershipConfig{Replica: "a", KeyPrefix: prefix, Every: time.Second, TTL: 5 * time.Second,
		SetLive: func(_ context.Context, fw *membership.Forwarding) (int, int, int) {
			applied = append(applied, fw.Live)
			return 0, 0, 0
		},
		Scanning: func() bool { return false }, Topics: []string{"orders"}},
		q, NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	p := o.runOnce(ctx)
	if wait := time.Until(p.next); p.err != nil || wait <= 0 || wait > time.Second {
		t.Errorf("heartbeat %v, wait before the next %s; want no error, within the interval", p.err, wait)
	}
	if len(applied) != 1 || !slices.Equal(applied[0], []string{"a"}) {
		t.Fatalf("live replicas applied %v, want [[a]]", applied)
	}
	fw, err := membership.New(q).Forwarding(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if got := fw.Served["a"]; !slices.Equal(got, []string{"orders"}) {
		t.Errorf("topics reported for a: %v, want [orders]", got)
	}
	o.runOnce(ctx)
	if len(applied) != 1 {
		t.Errorf("a second pass with the same live replicas applied them again: %v", applied)
	}
}
