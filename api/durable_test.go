package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// newDurableFixture is the API over a private master whose replica's link
// the test holds, on a queue that waits for that replica.
func newDurableFixture(t *testing.T) (*fixture, *e2etest.Replicated) {
	t.Helper()
	r := e2etest.StartReplicated(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Master.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	prefix := "dur"
	l := queue.Layout{Version: queue.LayoutVersion, Name: "orders", Slots: 4, Format: queue.FormatEnvelope, Sink: "amqp", Exchange: "events", RoutingKey: "orders"}
	if _, err := queue.New(rdb).Register(context.Background(), prefix, "test-replica", []queue.Layout{l}); err != nil {
		t.Fatalf("register: %v", err)
	}
	q := queue.New(rdb).WithDurability(queue.Durability{Replicas: 1, Timeout: time.Second})
	f := &fixture{t: t, rdb: rdb, q: q, prefix: prefix, orders: l.Topic(prefix), logs: &syncBuffer{}}
	f.metrics = NewMetrics(prometheus.NewRegistry())
	srv, err := New(Options{Queue: q, Prefix: prefix, Tokens: []Token{{Secret: fullToken}},
		MaxBody: map[string]int{"amqp": 1 << 20}, MaxRequest: maxRequest, Metrics: f.metrics,
		Log: slog.New(slog.NewJSONHandler(f.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f.base = "http://" + serve(t, srv, nil)
	f.client = &http.Client{Timeout: 20 * time.Second}
	t.Cleanup(f.client.CloseIdleConnections)
	return f, r
}

// TestAPIAnswers503UntilTheReplicaConfirms: with WAIT_REPLICAS 1, the API
// answers 201 while the replica is in step; with its link held, 503
// not_replicated (the message written, Retry-After, a body saying that
// repeating is safe) for one message and for each of a batch; once the
// master counts the replica lagging, 503 too_few_replicas; with the link
// back, the same request is accepted and the id names one message.
func TestAPIAnswers503UntilTheReplicaConfirms(t *testing.T) {
	f, r := newDurableFixture(t)
	const path = "/v1/topics/orders/messages"
	f.want(f.do("POST", path, fullToken, `{"id":"a","body":"x","delay":"1h"}`), http.StatusCreated, "")

	r.Link.Stall()
	start := time.Now()
	rp := f.do("POST", path, fullToken, `{"id":"b","body":"x","delay":"1h"}`)
	f.want(rp, http.StatusServiceUnavailable, "not_replicated")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("503 took %s, WAIT timeout 1s", took)
	}
	if rp.header.Get("Retry-After") == "" || !strings.Contains(rp.raw, "repeating with the same id is safe") {
		t.Errorf("503 without Retry-After or the advice: %v %s", rp.header, rp.raw)
	}
	batch := f.do("POST", path+":batch", fullToken, `{"messages":[{"id":"c1","body":"x","delay":"1h"},{"id":"c2","body":"x","delay":"1h"}]}`)
	if batch.status != http.StatusOK || batch.header.Get("Retry-After") == "" {
		t.Fatalf("batch with the link held: %d %v %s", batch.status, batch.header, batch.raw)
	}
	for i, res := range batch.json["results"].([]any) {
		if st := res.(map[string]any)["status"]; st != float64(http.StatusServiceUnavailable) {
			t.Errorf("batch result %d with the link held: %v, want 503", i, res)
		}
	}
	dWritten := 0 // d, answered not_replicated before acceptance stopped
	e2etest.WaitFor(t, 10*time.Second, "the API to refuse with too_few_replicas", func() bool {
		code := f.do("POST", path, fullToken, `{"id":"d","body":"x","delay":"1h"}`).code()
		if code == "not_replicated" {
			dWritten = 1
		}
		return code == "too_few_replicas"
	})

	r.Link.Restore()
	r.WaitInSync(t, 20*time.Second)
	var last reply
	e2etest.WaitFor(t, 5*time.Second, "the API to accept again", func() bool {
		last = f.do("POST", path, fullToken, `{"id":"b","body":"y","delay":"1h"}`)
		return last.status/100 == 2
	})
	if last.status != http.StatusOK {
		t.Errorf("the retry of b answered %d, want 200 (it replaced the write not confirmed)", last.status)
	}
	n := 0
	for slot := range f.orders.Slots {
		c, _ := f.rdb.ZCard(t.Context(), f.orders.Keys(slot).Scheduled).Result()
		n += int(c)
	}
	// a, b once, c1, c2, and d when it was written before acceptance
	// stopped: a refusal with too_few_replicas writes nothing.
	if n != 4+dWritten {
		t.Errorf("%d messages scheduled, want %d (a, b once, c1, c2, d %d)", n, 4+dWritten, dWritten)
	}
}
