package tracing

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// recordingExporter keeps the sizes of the batches it was given; while
// hold is open, ExportSpans waits for it.
type recordingExporter struct {
	mu       sync.Mutex
	batches  []int
	names    []string
	shutdown bool
	hold     chan struct{}
	entered  chan struct{}
}

func (e *recordingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.hold != nil {
		select {
		case e.entered <- struct{}{}:
		default:
		}
		<-e.hold
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.batches = append(e.batches, len(spans))
	for _, s := range spans {
		e.names = append(e.names, s.Name())
	}
	return nil
}

func (e *recordingExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shutdown = true
	return nil
}

func (e *recordingExporter) exported() (spans int, batches []int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range e.batches {
		spans += n
	}
	return spans, append([]int(nil), e.batches...)
}

// errorsSeen collects what a batcher reports.
type errorsSeen struct {
	mu   sync.Mutex
	errs []error
}

func (s *errorsSeen) handle(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
}

func (s *errorsSeen) joined() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

// provider is a tracer provider whose only processor is a batcher with cfg.
func provider(t *testing.T, exp *recordingExporter, cfg batchConfig, opts ...sdktrace.TracerProviderOption) (*sdktrace.TracerProvider, *errorsSeen) {
	seen := &errorsSeen{}
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithSpanProcessor(newBatcher(exp, cfg, seen.handle)))...)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, seen
}

func endSpans(tp *sdktrace.TracerProvider, n int, name string) {
	tr := tp.Tracer("test")
	for range n {
		_, span := tr.Start(context.Background(), name)
		span.End()
	}
}

// waitExported waits up to 10 s for want spans to be exported.
func waitExported(t *testing.T, exp *recordingExporter, want int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, batches := exp.exported()
		if got == want {
			return batches
		}
		if got > want || time.Now().After(deadline) {
			t.Fatalf("%d spans exported in batches %v, want %d", got, batches, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFullBatchesAreExportedAtOnceTheRestAtTheDelayOrFlush: spans fewer
// than a batch wait for the delay (an hour here) or a flush; a full batch
// goes at once, with what else waits (so fewer than a batch are left); no
// batch is larger than the batch size.
func TestFullBatchesAreExportedAtOnceTheRestAtTheDelayOrFlush(t *testing.T) {
	exp := &recordingExporter{}
	tp, seen := provider(t, exp, batchConfig{delay: time.Hour, timeout: time.Second, maxQueue: 100, maxBatch: 4})
	endSpans(tp, 3, "a")
	time.Sleep(50 * time.Millisecond)
	if got, _ := exp.exported(); got != 0 {
		t.Fatalf("%d spans of a batch not full exported before the delay or a flush", got)
	}
	endSpans(tp, 7, "b")
	deadline := time.Now().Add(10 * time.Second)
	for got, _ := exp.exported(); got < 7; got, _ = exp.exported() {
		if time.Now().After(deadline) {
			t.Fatalf("%d spans exported: of 10 ended with batches of 4, a full batch (%d) waits", got, 10-got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, batches := exp.exported()
	if got != 10 {
		t.Fatalf("after ForceFlush, %d spans exported, want 10", got)
	}
	for _, n := range batches {
		if n > 4 {
			t.Errorf("a batch of %d spans (batches %v), more than OTEL_BSP_MAX_EXPORT_BATCH_SIZE 4", n, batches)
		}
	}
	if err := seen.joined(); err != nil {
		t.Errorf("reported: %v", err)
	}
}

// TestSpansWaitAtMostTheDelay: spans fewer than a batch are exported once
// the schedule delay has passed, with no flush: each group within the delay
// and a margin for a loaded host (spanMargin), far less than the export
// timeout or a second delay would take.
func TestSpansWaitAtMostTheDelay(t *testing.T) {
	const delay = 250 * time.Millisecond
	const spanMargin = 500 * time.Millisecond // scheduling on 2 loaded cores
	exp := &recordingExporter{}
	tp, _ := provider(t, exp, batchConfig{delay: delay, timeout: 5 * time.Second, maxQueue: 100, maxBatch: 50})
	for i, group := range []struct {
		n, total int
	}{{3, 3}, {2, 5}} {
		ended := time.Now()
		endSpans(tp, group.n, "g"+strconv.Itoa(i))
		waitExported(t, exp, group.total)
		if waited := time.Since(ended); waited > delay+spanMargin {
			t.Errorf("group %d: %d spans exported %v after they ended, want at most the %v delay (+%v margin)", i, group.n, waited, delay, spanMargin)
		}
	}
}

// TestAFullQueueDropsSpansCountedWithoutHoldingTheCaller: while the
// exporter is stuck, ending spans never waits; what the queue cannot hold
// is dropped, and the count is reported once the exporter is back.
func TestAFullQueueDropsSpansCountedWithoutHoldingTheCaller(t *testing.T) {
	exp := &recordingExporter{hold: make(chan struct{}), entered: make(chan struct{}, 1)}
	tp, seen := provider(t, exp, batchConfig{delay: time.Hour, timeout: time.Second, maxQueue: 6, maxBatch: 2})
	endSpans(tp, 2, "first") // a full batch: the exporter takes it and sticks
	select {
	case <-exp.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first full batch never reached the exporter")
	}
	ended := make(chan struct{})
	go func() {
		endSpans(tp, 20, "more")
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("ending spans waited for the stuck exporter")
	}
	close(exp.hold)
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := exp.exported(); got != 2+6 {
		t.Errorf("%d spans exported, want the 2 taken and the 6 the queue held", got)
	}
	if err := seen.joined(); err == nil || !strings.Contains(err.Error(), "dropped 14 spans") || !strings.Contains(err.Error(), "OTEL_BSP_MAX_QUEUE_SIZE") {
		t.Errorf("reported %v, want 14 dropped spans naming OTEL_BSP_MAX_QUEUE_SIZE", err)
	}
}

// TestShutdownExportsWhatWaitsThenNothingMore: Shutdown exports the spans
// waiting and shuts the exporter down; spans ended after it are not
// exported; a second Shutdown and a ForceFlush after it do nothing.
func TestShutdownExportsWhatWaitsThenNothingMore(t *testing.T) {
	exp := &recordingExporter{}
	tp, _ := provider(t, exp, batchConfig{delay: time.Hour, timeout: time.Second, maxQueue: 100, maxBatch: 50})
	endSpans(tp, 7, "a")
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := exp.exported(); got != 7 || !exp.shutdown {
		t.Fatalf("after Shutdown: %d spans exported (want 7), exporter shut down: %v", got, exp.shutdown)
	}
	endSpans(tp, 3, "late")
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Errorf("ForceFlush after Shutdown: %v", err)
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	if got, _ := exp.exported(); got != 7 {
		t.Errorf("%d spans exported, want the 7 ended before Shutdown", got)
	}
}

// TestUnsampledSpansAreNotExported: a span the sampler did not sample is
// not queued.
func TestUnsampledSpansAreNotExported(t *testing.T) {
	exp := &recordingExporter{}
	tp, _ := provider(t, exp, batchConfig{delay: time.Hour, timeout: time.Second, maxQueue: 100, maxBatch: 50},
		sdktrace.WithSampler(sdktrace.NeverSample()))
	endSpans(tp, 5, "a")
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := exp.exported(); got != 0 {
		t.Errorf("%d unsampled spans exported", got)
	}
}

// TestForceFlushEndsWithItsContext: a flush behind a stuck exporter
// returns when its context ends.
func TestForceFlushEndsWithItsContext(t *testing.T) {
	exp := &recordingExporter{hold: make(chan struct{}), entered: make(chan struct{}, 1)}
	tp, _ := provider(t, exp, batchConfig{delay: time.Hour, timeout: time.Second, maxQueue: 100, maxBatch: 1})
	defer close(exp.hold)
	endSpans(tp, 1, "a")
	<-exp.entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := tp.ForceFlush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ForceFlush behind a stuck exporter: %v, want the context's deadline", err)
	}
}

func TestBatchVariables(t *testing.T) {
	cfg, err := readBatchConfig(env(nil))
	if want := (batchConfig{delay: 5 * time.Second, timeout: 30 * time.Second, maxQueue: 2048, maxBatch: 512}); err != nil || cfg != want {
		t.Errorf("defaults: %+v, %v; want %+v (the SDK's)", cfg, err, want)
	}
	cfg, err = readBatchConfig(env(map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_BSP_EXPORT_TIMEOUT": "2000",
		"OTEL_BSP_MAX_QUEUE_SIZE": "64", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "128"}))
	if want := (batchConfig{delay: 100 * time.Millisecond, timeout: 2 * time.Second, maxQueue: 64, maxBatch: 64}); err != nil || cfg != want {
		t.Errorf("set: %+v, %v; want %+v (a batch no larger than the queue)", cfg, err, want)
	}
	err = Check(env(map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "5s", "OTEL_BSP_EXPORT_TIMEOUT": "0",
		"OTEL_BSP_MAX_QUEUE_SIZE": "-1", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "many"}))
	for _, name := range []string{"OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Check error %v does not name %s", err, name)
		}
	}
}
