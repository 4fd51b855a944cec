package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delaybridge/delaybridge/api"
	"github.com/delaybridge/delaybridge/queue"
)

// HTTPResult is what the api scenario measures: single POSTs paced at
// SingleRate (their latency), batches of BatchSize back to back (their
// throughput), and the Go producer API's ScheduleBatch on the same topic in
// the same run, the ceiling the HTTP layer is compared with.
type HTTPResult struct {
	SingleRate     float64 `json:"single_rate_per_s"`
	SingleSent     int     `json:"single_sent"`
	SingleP50      float64 `json:"single_p50_ms"`
	SingleP99      float64 `json:"single_p99_ms"`
	SingleErrors   int     `json:"single_errors"`
	BatchSize      int     `json:"batch_size"`
	BatchRate      float64 `json:"batch_messages_per_s"`
	GoProducerRate float64 `json:"go_producer_messages_per_s"`
}

const (
	apiToken       = "bench-api-token-0123456789"
	apiSingleRate  = 1000
	apiBatchSize   = 1000
	apiConcurrency = 4
)

// runAPI serves the HTTP API in this process over loopback TCP, on the
// bench's Redis, with an envelope topic of 8 slots whose messages fall due
// an hour later (nothing is delivered: this measures the write path).
func runAPI(ctx context.Context, e *env) (Scenario, error) {
	r := Scenario{}
	prefix := e.prefix("api")
	defer e.dropKeys(prefix)
	l := queue.Layout{Version: queue.LayoutVersion, Name: "orders", Slots: 8, Format: queue.FormatEnvelope, Sink: "amqp"}
	if _, err := e.q.Register(ctx, prefix, "bench", []queue.Layout{l}); err != nil {
		return r, err
	}
	srv, err := api.New(api.Options{Queue: e.q, Prefix: prefix, Tokens: []api.Token{{Secret: apiToken}},
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		return r, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return r, err
	}
	sctx, stop := context.WithCancel(ctx)
	var serving sync.WaitGroup
	serving.Go(func() { _ = srv.Serve(sctx, ln, nil) })
	defer func() { stop(); serving.Wait() }()
	base := "http://" + ln.Addr().String() + "/v1/topics/orders/messages"
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	defer client.CloseIdleConnections()

	h := &HTTPResult{BatchSize: apiBatchSize}
	singleFor, batches := 10*time.Second, 200
	if e.o.quick {
		singleFor, batches = 3*time.Second, 40
	}
	if err := apiSingles(ctx, client, base, singleFor, h); err != nil {
		return r, err
	}
	if h.BatchRate, err = apiBatches(ctx, client, base+":batch", batches); err != nil {
		return r, err
	}
	if h.GoProducerRate, err = goProducerBatches(ctx, e.q, l.Topic(prefix), batches); err != nil {
		return r, err
	}
	r.HTTP = h
	r.Messages = h.SingleSent + 2*batches*apiBatchSize
	r.Throughput, r.Ceiling = h.BatchRate, h.GoProducerRate
	if h.GoProducerRate > 0 {
		r.Ratio = h.BatchRate / h.GoProducerRate
	}
	r.Notes = append(r.Notes, fmt.Sprintf("single POSTs at %.0f/s: p50 %.2f ms, p99 %.2f ms (%d errors); batches of %d: %.0f msg/s; Go producer API ScheduleBatch: %.0f msg/s",
		h.SingleRate, h.SingleP50, h.SingleP99, h.SingleErrors, apiBatchSize, h.BatchRate, h.GoProducerRate))
	if h.SingleErrors > 0 {
		return r, fmt.Errorf("%d single POSTs failed", h.SingleErrors)
	}
	return r, nil
}

// apiSingles sends one POST per message at apiSingleRate for d (open loop:
// a slow answer does not slow the next send) and records their latency.
func apiSingles(ctx context.Context, client *http.Client, url string, d time.Duration, h *HTTPResult) error {
	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      atomic.Int64
		wg        sync.WaitGroup
	)
	// Each send has its own moment, start + n/rate: a loop held up by a
	// loaded machine catches up instead of dropping ticks.
	start := time.Now()
	n := 0
	for time.Since(start) < d && ctx.Err() == nil {
		time.Sleep(time.Until(start.Add(time.Duration(n) * time.Second / apiSingleRate)))
		n++
		body := fmt.Sprintf(`{"id":"single-%d","body":"%s","delay":"1h"}`, n, strings.Repeat("x", 128))
		wg.Go(func() {
			t0 := time.Now()
			status, err := post(ctx, client, url, body)
			lat := time.Since(t0)
			if err != nil || status != http.StatusCreated {
				errs.Add(1)
				return
			}
			mu.Lock()
			latencies = append(latencies, lat)
			mu.Unlock()
		})
	}
	sending := time.Since(start)
	wg.Wait()
	h.SingleSent, h.SingleErrors = n, int(errs.Load())
	h.SingleRate = float64(n) / sending.Seconds() // the rate achieved: below 1,000 when this machine cannot send that fast
	slices.Sort(latencies)
	if len(latencies) > 0 {
		h.SingleP50 = ms(latencies[len(latencies)/2])
		h.SingleP99 = ms(latencies[len(latencies)*99/100])
	}
	return ctx.Err()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// apiBatches posts n batches of apiBatchSize from apiConcurrency clients
// and returns messages per second.
func apiBatches(ctx context.Context, client *http.Client, url string, n int) (float64, error) {
	bodies := make([]string, n)
	for b := range bodies {
		var s strings.Builder
		s.WriteString(`{"messages":[`)
		for i := range apiBatchSize {
			if i > 0 {
				s.WriteByte(',')
			}
			fmt.Fprintf(&s, `{"id":"batch-%d-%d","body":"%s","delay":"1h"}`, b, i, strings.Repeat("x", 128))
		}
		s.WriteString(`]}`)
		bodies[b] = s.String()
	}
	return parallel(ctx, n, func(b int) error {
		status, err := post(ctx, client, url, bodies[b])
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("batch: status %d", status)
		}
		return err
	})
}

// goProducerBatches is apiBatches through queue.ScheduleBatch.
func goProducerBatches(ctx context.Context, q *queue.Queue, t queue.Topic, n int) (float64, error) {
	body := []byte(strings.Repeat("x", 128))
	return parallel(ctx, n, func(b int) error {
		items := make([]queue.Item, apiBatchSize)
		for i := range items {
			items[i] = queue.Item{Message: queue.Message{ID: fmt.Sprintf("go-%d-%d", b, i), Body: body}, When: queue.In(time.Hour)}
		}
		_, err := q.ScheduleBatch(ctx, t, items)
		return err
	})
}

// parallel runs do(0..n-1) from apiConcurrency goroutines and returns
// messages (apiBatchSize per call) per second.
func parallel(ctx context.Context, n int, do func(int) error) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, apiConcurrency)
	start := time.Now()
	for range apiConcurrency {
		wg.Go(func() {
			for b := int(next.Add(1)) - 1; b < n && ctx.Err() == nil; b = int(next.Add(1)) - 1 {
				if err := do(b); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(n*apiBatchSize) / took.Seconds(), ctx.Err()
}

func post(ctx context.Context, client *http.Client, url, body string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewBufferString(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}
