package tracing

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// exports records each ExportSpans call's size.
type exports struct {
	mu    sync.Mutex
	sizes []int
	spans int
	shut  bool
	got   chan struct{}
}

func newExports() *exports { return &exports{got: make(chan struct{}, 1000)} }

func (e *exports) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	e.sizes = append(e.sizes, len(s))
	e.spans += len(s)
	e.mu.Unlock()
	e.got <- struct{}{}
	return nil
}

func (e *exports) Shutdown(context.Context) error {
	e.mu.Lock()
	e.shut = true
	e.mu.Unlock()
	return nil
}

func (e *exports) state() (sizes []int, spans int, shut bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int(nil), e.sizes...), e.spans, e.shut
}

func endSpans(tp *sdktrace.TracerProvider, n int) {
	tr := tp.Tracer("test")
	for range n {
		_, s := tr.Start(context.Background(), "s")
		s.End()
	}
}

// A full batch is exported at once, without waiting for the schedule
// delay; what is left waits for it, or for a flush.
func TestBatcherExportsAFullBatchAtOnceAndTheRestOnSchedule(t *testing.T) {
	exp := newExports()
	b := newBatcher(exp, batcherOptions{Delay: time.Hour, Timeout: 5 * time.Second, MaxQueue: 100, MaxExport: 10}, func(err error) { t.Errorf("reported: %v", err) })
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	endSpans(tp, 25)
	for range 2 {
		select {
		case <-exp.got:
		case <-time.After(5 * time.Second):
			sizes, _, _ := exp.state()
			t.Fatalf("full batches not exported within 5 s with an hour's delay: exports %v", sizes)
		}
	}
	if _, spans, _ := exp.state(); spans < 20 {
		t.Fatalf("%d spans exported, want the two full batches", spans)
	}
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sizes, spans, _ := exp.state(); spans != 25 {
		t.Fatalf("after a flush %d spans exported (%v), want 25", spans, sizes)
	}
	endSpans(tp, 3)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	sizes, spans, shut := exp.state()
	if spans != 28 || !shut {
		t.Fatalf("after shutdown %d spans exported (%v), exporter shut %v; want 28 and shut", spans, sizes, shut)
	}
	for _, n := range sizes {
		if n > 10 {
			t.Errorf("an export of %d spans, more than OTEL_BSP_MAX_EXPORT_BATCH_SIZE 10", n)
		}
	}
}

func TestBatcherExportsWhatIsQueuedAfterTheScheduleDelay(t *testing.T) {
	exp := newExports()
	b := newBatcher(exp, batcherOptions{Delay: 50 * time.Millisecond, Timeout: 5 * time.Second, MaxQueue: 100, MaxExport: 10}, func(err error) { t.Errorf("reported: %v", err) })
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	defer tp.Shutdown(context.Background())
	endSpans(tp, 3)
	select {
	case <-exp.got:
	case <-time.After(5 * time.Second):
		t.Fatal("3 spans not exported within 5 s with a 50 ms schedule delay")
	}
	if _, spans, _ := exp.state(); spans != 3 {
		t.Fatalf("%d spans exported, want 3", spans)
	}
}

// A full queue drops spans, never blocks the caller, and says how many at
// the next export; unsampled spans are not queued.
func TestBatcherDropsWhatAFullQueueCannotHoldAndSaysSo(t *testing.T) {
	exp := newExports()
	var mu sync.Mutex
	var reported []error
	b := newBatcher(exp, batcherOptions{Delay: time.Hour, Timeout: 5 * time.Second, MaxQueue: 5, MaxExport: 100}, func(err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	endSpans(tp, 12)
	never := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b), sdktrace.WithSampler(sdktrace.NeverSample()))
	endSpans(never, 4)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, spans, _ := exp.state()
	mu.Lock()
	defer mu.Unlock()
	if spans != 5 || len(reported) != 1 || !strings.Contains(reported[0].Error(), "dropped 7 spans") || !strings.Contains(reported[0].Error(), "OTEL_BSP_MAX_QUEUE_SIZE=5") {
		t.Fatalf("%d spans exported, reports %v; want 5 exported and one report of 7 dropped", spans, reported)
	}
}

func TestBatcherVariables(t *testing.T) {
	o, err := batcherEnv(env(nil))
	if err != nil || o != (batcherOptions{Delay: 5 * time.Second, Timeout: 30 * time.Second, MaxQueue: 2048, MaxExport: 512}) {
		t.Fatalf("defaults %+v, %v; want the SDK's", o, err)
	}
	o, err = batcherEnv(env(map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_BSP_EXPORT_TIMEOUT": "1000", "OTEL_BSP_MAX_QUEUE_SIZE": "64", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "128"}))
	if err != nil || o != (batcherOptions{Delay: 200 * time.Millisecond, Timeout: time.Second, MaxQueue: 64, MaxExport: 64}) {
		t.Fatalf("set: %+v, %v; want 200 ms, 1 s, 64, 64 (a batch no larger than the queue)", o, err)
	}
	err = Check(env(map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "soon", "OTEL_BSP_MAX_QUEUE_SIZE": "0"}))
	for _, name := range []string{"OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_MAX_QUEUE_SIZE"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Check error %v does not name %s", err, name)
		}
	}
}

// BenchmarkProcessorAtAPace is the CPU an ended span costs the process
// when spans end at the daemon's pace (one every 500 µs, the steady
// scenario's 2,000 a second), through the SDK's batch span processor and
// through batcher, exporting to a no-op exporter.
func BenchmarkProcessorAtAPace(b *testing.B) {
	for _, bc := range []struct {
		name string
		proc func() sdktrace.SpanProcessor
	}{
		{"sdk", func() sdktrace.SpanProcessor { return sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter()) }},
		{"batcher", func() sdktrace.SpanProcessor {
			o, _ := batcherEnv(env(nil))
			return newBatcher(tracetest.NewNoopExporter(), o, func(error) {})
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(bc.proc()))
			defer tp.Shutdown(context.Background())
			tr := tp.Tracer("bench")
			cpu0 := processCPU(b)
			b.ResetTimer()
			for range b.N {
				_, s := tr.Start(context.Background(), "s")
				s.End()
				time.Sleep(500 * time.Microsecond)
			}
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/span")
		})
	}
}
