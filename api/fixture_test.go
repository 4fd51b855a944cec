package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// Tokens of the fixture: full may use every topic, ordersOnly only orders.
const (
	fullToken       = "full-token-0123456789abcdef"
	ordersOnlyToken = "orders-token-0123456789abcdef"
)

// fixture is the API served over TCP on 127.0.0.1 over a test prefix of the
// real Redis, with three registered topics: orders (envelope, 4 slots,
// amqp), legacy (raw, 1 slot, amqp) and small (envelope, kafka, bodies of
// at most smallMax bytes).
type fixture struct {
	t       *testing.T
	rdb     *redis.Client
	q       *queue.Queue
	prefix  string
	orders  queue.Topic
	legacy  queue.Topic
	small   queue.Topic
	base    string
	client  *http.Client
	metrics *Metrics
	logs    *syncBuffer
}

const (
	smallMax   = 64
	maxRequest = 64 << 10
)

// fixtureRoutingKeys are the fixture's DELAYBRIDGE_TOPIC_<NAME>_ROUTING_KEYS:
// orders takes the keys the tests send (eu.orders, and r in
// TestAnswersMatchTheOpenAPIDocument).
func fixtureRoutingKeys(topic string) []string {
	if topic == "orders" {
		return []string{"eu.*", "r"}
	}
	return nil
}

// legacyMaxMessage is the fixture's DELAYBRIDGE_TOPIC_LEGACY_MAX_MESSAGE_SIZE;
// every other topic takes DELAYBRIDGE_MAX_MESSAGE_SIZE's default.
const legacyMaxMessage = 100

func fixtureMessageSize(topic string) int {
	if topic == "legacy" {
		return legacyMaxMessage
	}
	return queue.DefaultMaxMessageSize
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	rdb, prefix := redistest.New(t)
	q := queue.New(rdb)
	ls := []queue.Layout{
		{Version: queue.LayoutVersion, Name: "orders", Slots: 4, Format: queue.FormatEnvelope, Sink: "amqp", Exchange: "events", RoutingKey: "orders"},
		{Version: queue.LayoutVersion, Name: "legacy", Slots: 1, Format: queue.FormatRaw, Sink: "amqp", Exchange: "events", RoutingKey: "legacy"},
		{Version: queue.LayoutVersion, Name: "small", Slots: 1, Format: queue.FormatEnvelope, Sink: "kafka", KafkaTopic: "small"},
	}
	if _, err := q.Register(context.Background(), prefix, "test-replica", ls); err != nil {
		t.Fatalf("register: %v", err)
	}
	f := &fixture{t: t, rdb: rdb, q: q, prefix: prefix, orders: ls[0].Topic(prefix), legacy: ls[1].Topic(prefix),
		small: ls[2].Topic(prefix), logs: &syncBuffer{}}
	f.metrics = NewMetrics(prometheus.NewRegistry())
	srv, err := New(Options{Queue: q, Prefix: prefix,
		Tokens:     []Token{{Secret: fullToken}, {Secret: ordersOnlyToken, Topics: []string{"orders"}}},
		MaxBody:    map[string]int{"amqp": 1 << 20, "kafka": smallMax},
		MaxRequest: maxRequest, Metrics: f.metrics, RoutingKeys: fixtureRoutingKeys, MaxMessageSize: fixtureMessageSize,
		Log: slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	f.base = "http://" + serve(t, srv, nil)
	f.client = &http.Client{Timeout: 20 * time.Second}
	t.Cleanup(f.client.CloseIdleConnections)
	return f
}

// serve runs srv on a free loopback port until the test ends; it returns
// the address.
func serve(t *testing.T, srv *Server, tlsCfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, tlsCfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// reply is an answer, its body decoded when it is JSON.
type reply struct {
	status int
	header http.Header
	raw    string
	json   map[string]any
}

// code is the error code of an error answer.
func (r reply) code() string { s, _ := r.json["code"].(string); return s }

// do sends one request with token (none when ""), body as JSON unless ct
// says otherwise.
func (f *fixture) do(method, path, token, body string) reply {
	f.t.Helper()
	return f.doType(method, path, token, "application/json", body)
}

func (f *fixture) doType(method, path, token, ct, body string) reply {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.base+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if body != "" && ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &r.json); err != nil {
			f.t.Fatalf("%s %s: answer is not a JSON object: %v\n%s", method, path, err, b)
		}
	}
	return r
}

// want fails the test unless r has status (and, for errors, code).
func (f *fixture) want(r reply, status int, code string) {
	f.t.Helper()
	if r.status != status || (code != "" && r.code() != code) {
		f.t.Fatalf("got %d %s, want %d %s", r.status, r.raw, status, code)
	}
	if status >= 400 {
		if msg, _ := r.json["error"].(string); msg == "" {
			f.t.Fatalf("error answer without an error message: %s", r.raw)
		}
	}
}

// keys are the test prefix's keys but the registry.
func (f *fixture) keys() []string {
	f.t.Helper()
	var out []string
	for _, pattern := range []string{f.prefix + "*", "{" + f.prefix + "*"} {
		ks, err := f.rdb.Keys(context.Background(), pattern).Result()
		if err != nil {
			f.t.Fatal(err)
		}
		for _, k := range ks {
			if k != queue.TopicsKey(f.prefix) {
				out = append(out, k)
			}
		}
	}
	return out
}

// syncBuffer is a log sink the server writes from its goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

func redisAndPrefix(t *testing.T) (*redis.Client, string) {
	t.Helper()
	return redistest.New(t)
}
