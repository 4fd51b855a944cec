package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// newHugeFixture is newBigFixture without a sink's body limit, so that a
// message as large as a request (16 MiB) is taken; opts changes the
// server's options. It returns the server too.
func newHugeFixture(t *testing.T, opts func(*Options)) (*fixture, *Server) {
	t.Helper()
	rdb, prefix := redistest.New(t)
	q := queue.New(rdb)
	ls := []queue.Layout{{Version: queue.LayoutVersion, Name: "orders", Slots: 1, Format: queue.FormatEnvelope,
		Sink: "amqp", Exchange: "events", RoutingKey: "orders"}}
	if _, err := q.Register(context.Background(), prefix, "test-replica", ls); err != nil {
		t.Fatalf("register: %v", err)
	}
	o := Options{Queue: q, Prefix: prefix, Tokens: []Token{{Secret: fullToken}},
		Metrics: NewMetrics(prometheus.NewRegistry()), Log: slog.New(slog.DiscardHandler)}
	if opts != nil {
		opts(&o)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, rdb: rdb, q: q, prefix: prefix, orders: ls[0].Topic(prefix), base: "http://" + serve(t, srv, nil),
		client: &http.Client{Timeout: 60 * time.Second}, logs: &syncBuffer{}}
	t.Cleanup(f.client.CloseIdleConnections)
	return f, srv
}

// allocated runs fn and returns the bytes the whole process allocated
// meanwhile, and the highest heap seen (sampled every few milliseconds)
// above the heap before.
func allocated(fn func()) (total, peak uint64) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		var hi uint64
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			hi = max(hi, m.HeapAlloc)
			select {
			case <-stop:
				done <- hi
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	hi := <-done
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if hi > before.HeapAlloc {
		peak = hi - before.HeapAlloc
	}
	return after.TotalAlloc - before.TotalAlloc, peak
}

// sendRaw sends body to path and returns the status, reading the answer
// without keeping it.
func (f *fixture) sendRaw(method, path string, body []byte) int {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, f.base+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+fullToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestA16MiBRequestCostsItsSizeAboutOnce: one schedule of a 16 MiB request
// (text body, then base64 body) and one GET of each message allocate, in
// the whole process (the test's client included), at most 64 MiB beyond
// the body. Before, a schedule allocated ~5× and a GET ~4× the body.
func TestA16MiBRequestCostsItsSizeAboutOnce(t *testing.T) {
	f, _ := newHugeFixture(t, nil)
	const size = DefaultMaxRequest - 200
	text := []byte(`{"id":"text","delay":"1h","body":"` + strings.Repeat("x", size) + `"}`)
	bin := make([]byte, size/4*3)
	for i := range bin {
		bin[i] = byte(i*7 + i>>8)
	}
	b64 := []byte(`{"id":"bin","delay":"1h","body_base64":"` + base64.StdEncoding.EncodeToString(bin) + `"}`)
	const limit = 64 << 20
	// Each is measured twice, the smaller count kept: what another test's
	// goroutines still finishing allocate meanwhile is not the request's.
	quieter := func(fn func()) (total, peak uint64) {
		total, peak = allocated(fn)
		t2, p2 := allocated(fn)
		return min(total, t2), min(peak, p2)
	}
	for _, c := range []struct {
		id   string
		body []byte
	}{{"text", text}, {"bin", b64}} {
		var status int
		total, peak := quieter(func() { status = f.sendRaw("POST", "/v1/topics/orders/messages", c.body) })
		t.Logf("schedule %s (%d MiB): allocated %d MiB, heap peak +%d MiB", c.id, len(c.body)>>20, total>>20, peak>>20)
		if status != http.StatusOK { // the second replaced the first
			t.Fatalf("schedule %s: status %d", c.id, status)
		}
		if total > uint64(len(c.body))+limit {
			t.Errorf("schedule %s allocated %d MiB, want at most the body + 64 MiB", c.id, total>>20)
		}
		total, peak = quieter(func() { status = f.sendRaw("GET", "/v1/topics/orders/messages/"+c.id, nil) })
		t.Logf("get %s: allocated %d MiB, heap peak +%d MiB", c.id, total>>20, peak>>20)
		if status != http.StatusOK {
			t.Fatalf("get %s: status %d", c.id, status)
		}
		if total > uint64(len(c.body))+limit {
			t.Errorf("get %s allocated %d MiB, want at most the body + 64 MiB", c.id, total>>20)
		}
	}
}

// TestStreamedBodyDecodesToTheMessage: writeMessage's JSON, body written
// last and escaped by hand (or as base64), decodes to the very body.
func TestStreamedBodyDecodesToTheMessage(t *testing.T) {
	for _, body := range []string{"", "plain", "q\"b\\s/\n\r\t\b\f\x00\x1f\x7f", "ü€😀\u2028\u2029<>&", "\xff\xfe bin", strings.Repeat("ab\n", 50000)} {
		rec := httptest.NewRecorder()
		writeMessage(rec, messageOut{ID: "i", Topic: "t", State: "scheduled", Headers: map[string]string{"k": "v"}}, []byte(body))
		var got struct {
			ID         string            `json:"id"`
			Headers    map[string]string `json:"headers"`
			Body       *string           `json:"body"`
			BodyBase64 *string           `json:"body_base64"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("body %.40q: answer %.200s is not JSON: %v", body, rec.Body.Bytes(), err)
		}
		var b []byte
		switch {
		case got.Body != nil:
			b = []byte(*got.Body)
		case got.BodyBase64 != nil:
			b, _ = base64.StdEncoding.DecodeString(*got.BodyBase64)
		}
		if string(b) != body || got.ID != "i" || got.Headers["k"] != "v" {
			t.Errorf("body %.40q: answer %.200s", body, rec.Body.Bytes())
		}
	}
}
