package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestReadyzSaysWhenAcceptanceStops: with WAIT_REPLICAS=1, /readyz is
// ready while the replica is in step, answers 503 naming the variable once
// the master counts it lagging (its link held), and is ready again when
// the link is back. delaybridge_acceptance_unconfirmed_total counts, by
// path, the schedules not confirmed.
func TestReadyzSaysWhenAcceptanceStops(t *testing.T) {
	r := e2etest.StartReplicated(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Master.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	reg := prometheus.NewRegistry()
	accept := durableQueue(queue.New(rdb), config.Config{RedisWait: config.RedisWait{Replicas: 1, Timeout: 300 * time.Millisecond}}, reg, "api")
	srv := httptest.NewServer(routes(reg, rdb, nil, nil, nil, nil, accept))
	defer srv.Close()
	readyz := func() (int, string) {
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := readyz(); code != http.StatusOK {
		t.Fatalf("readyz with the replica in step: %d %s", code, body)
	}
	r.Link.Stall()
	tp := queue.Topic{Name: "orders", Prefix: "dur", Slots: 1, Format: queue.FormatEnvelope}
	if _, err := accept.Schedule(t.Context(), tp, queue.Message{ID: "a", Body: []byte("x")}, queue.In(time.Hour)); !queue.Unconfirmed(err) {
		t.Fatalf("schedule with the link held: %v, want it unconfirmed", err)
	}
	if n := testutil.ToFloat64(unconfirmedCounter(reg).WithLabelValues("api")); n != 1 {
		t.Errorf("delaybridge_acceptance_unconfirmed_total{path=\"api\"} = %v, want 1", n)
	}
	var body string
	e2etest.WaitFor(t, 15*time.Second, "readyz to say acceptance stopped", func() bool {
		var code int
		code, body = readyz()
		return code == http.StatusServiceUnavailable
	})
	if !strings.Contains(body, "acceptance: fewer replicas connected") || !strings.Contains(body, "DELAYBRIDGE_REDIS_WAIT_REPLICAS") {
		t.Errorf("readyz does not say why: %s", body)
	}
	r.Link.Restore()
	r.WaitInSync(t, 20*time.Second)
	e2etest.WaitFor(t, 5*time.Second, "readyz to be ready again", func() bool {
		code, _ := readyz()
		return code == http.StatusOK
	})
}
