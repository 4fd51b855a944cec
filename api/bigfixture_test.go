package api

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// newBigFixture is a fixture with one envelope topic, orders (1 slot, amqp),
// and the default request cap (16 MiB), for the tests of large requests.
func newBigFixture(t *testing.T) *fixture {
	t.Helper()
	rdb, prefix := redistest.New(t)
	q := queue.New(rdb)
	ls := []queue.Layout{{Version: queue.LayoutVersion, Name: "orders", Slots: 1, Format: queue.FormatEnvelope,
		Sink: "amqp", Exchange: "events", RoutingKey: "orders"}}
	if _, err := q.Register(context.Background(), prefix, "test-replica", ls); err != nil {
		t.Fatalf("register: %v", err)
	}
	srv, err := New(Options{Queue: q, Prefix: prefix, Tokens: []Token{{Secret: fullToken}},
		MaxBody: map[string]int{"amqp": 1 << 20}, Metrics: NewMetrics(prometheus.NewRegistry()),
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, rdb: rdb, q: q, prefix: prefix, orders: ls[0].Topic(prefix), base: "http://" + serve(t, srv, nil),
		client: &http.Client{Timeout: 20 * time.Second}, logs: &syncBuffer{}}
	t.Cleanup(f.client.CloseIdleConnections)
	return f
}
