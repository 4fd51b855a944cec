package tracing

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// batchConfig is the batch span processor's configuration, from the
// standard OTEL_BSP_* variables (the SDK's defaults when unset).
type batchConfig struct {
	delay    time.Duration // OTEL_BSP_SCHEDULE_DELAY: the longest a span waits to be exported
	timeout  time.Duration // OTEL_BSP_EXPORT_TIMEOUT: the longest one export may take
	maxQueue int           // OTEL_BSP_MAX_QUEUE_SIZE: spans waiting; more are dropped
	maxBatch int           // OTEL_BSP_MAX_EXPORT_BATCH_SIZE: spans per export
}

// readBatchConfig reads the OTEL_BSP_* variables, the SDK's defaults where
// unset: every bad one is an error naming it. A batch larger than the
// queue is the queue, as in the SDK.
func readBatchConfig(getenv func(string) string) (batchConfig, error) {
	var errs []error
	positive := func(name string, def int, unit string) int {
		s := strings.TrimSpace(getenv(name))
		if s == "" {
			return def
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive number%s", name, s, unit))
			return def
		}
		return n
	}
	const ms = " of milliseconds"
	cfg := batchConfig{
		delay:    time.Duration(positive("OTEL_BSP_SCHEDULE_DELAY", 5000, ms)) * time.Millisecond,
		timeout:  time.Duration(positive("OTEL_BSP_EXPORT_TIMEOUT", 30000, ms)) * time.Millisecond,
		maxQueue: positive("OTEL_BSP_MAX_QUEUE_SIZE", 2048, ""),
		maxBatch: positive("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, ""),
	}
	cfg.maxBatch = min(cfg.maxBatch, cfg.maxQueue)
	return cfg, errors.Join(errs...)
}

// batcher is the daemon's span processor: the SDK's batch span processor's
// contract (OTEL_BSP_*: spans exported in batches of at most maxBatch, at
// the latest delay after they end, dropped when maxQueue wait already)
// at less cost per span. The SDK's processor hands each ended span to its
// goroutine through a channel; here an ended span is appended to a slice
// under a lock, and the exporting goroutine wakes when a batch is full,
// when the delay has passed, or to flush (processor and export: 2.7 → 1.7
// µs per message in the daemon's profile, docs/performance.md).
type batcher struct {
	exp sdktrace.SpanExporter
	cfg batchConfig
	// handle reports what went wrong exporting (the daemon's log).
	handle func(error)

	mu      sync.Mutex
	pending []sdktrace.ReadOnlySpan
	// pendingBytes and exporting are spanBytes of the spans pending and of
	// those being exported: together at most maxBytes (maxQueueBytes).
	pendingBytes, exporting int
	maxBytes                int
	dropped                 int
	stopped                 bool

	full     chan struct{}      // a batch is waiting (capacity 1)
	flushes  chan chan struct{} // ForceFlush: closed once what waited is exported
	stop     chan struct{}      // closed by Shutdown
	done     chan struct{}      // closed when run has exported the last span
	stopOnce sync.Once
}

var _ sdktrace.SpanProcessor = (*batcher)(nil)

// newBatcher starts a batcher exporting to exp; Shutdown stops it.
func newBatcher(exp sdktrace.SpanExporter, cfg batchConfig, handle func(error)) *batcher {
	b := &batcher{
		exp:      exp,
		cfg:      cfg,
		maxBytes: maxQueueBytes,
		handle:   handle,
		full:     make(chan struct{}, 1),
		flushes:  make(chan chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go b.run()
	return b
}

// OnStart does nothing: spans are exported when they end.
func (*batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span for export, or drops it, counted, when
// maxQueue spans already wait or the spans held would pass maxBytes: span
// volume and its memory are bounded here, never by holding the caller.
func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	size := spanBytes(s)
	b.mu.Lock()
	if b.stopped || len(b.pending) >= b.cfg.maxQueue || b.pendingBytes+b.exporting+size > b.maxBytes {
		if !b.stopped {
			b.dropped++
		}
		b.mu.Unlock()
		return
	}
	b.pendingBytes += size
	b.pending = append(b.pending, s)
	full := len(b.pending) == b.cfg.maxBatch
	b.mu.Unlock()
	if full {
		select {
		case b.full <- struct{}{}:
		default: // already told
		}
	}
}

// run exports what waits whenever a batch is full, the delay has passed or
// a flush asks, until Shutdown; then it exports what is left.
func (b *batcher) run() {
	defer close(b.done)
	timer := time.NewTimer(b.cfg.delay)
	defer timer.Stop()
	var spare []sdktrace.ReadOnlySpan
	for {
		var flushed chan struct{}
		select {
		case <-b.stop:
			b.export(spare)
			return
		case <-timer.C:
		case <-b.full:
		case flushed = <-b.flushes:
		}
		spare = b.export(spare)
		if flushed != nil {
			close(flushed)
		}
		timer.Reset(b.cfg.delay)
	}
}

// export exports every span waiting, in batches of at most maxBatch, and
// returns the emptied slice for the next turn (next takes its place).
func (b *batcher) export(next []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	b.mu.Lock()
	spans, dropped := b.pending, b.dropped
	b.pending, b.dropped = next[:0], 0
	b.exporting, b.pendingBytes = b.pendingBytes, 0
	b.mu.Unlock()
	if dropped > 0 {
		b.handle(fmt.Errorf("dropped %d spans: %d spans or %d MiB were waiting to be exported (OTEL_BSP_MAX_QUEUE_SIZE)", dropped, b.cfg.maxQueue, b.maxBytes>>20))
	}
	defer func() {
		b.mu.Lock()
		b.exporting = 0
		b.mu.Unlock()
	}()
	for start := 0; start < len(spans); start += b.cfg.maxBatch {
		batch := spans[start:min(start+b.cfg.maxBatch, len(spans))]
		ctx, cancel := context.WithTimeout(context.Background(), b.cfg.timeout)
		if err := b.exp.ExportSpans(ctx, batch); err != nil {
			b.handle(fmt.Errorf("export %d spans: %w", len(batch), err))
		}
		cancel()
	}
	clear(spans) // the spans are garbage now
	return spans[:0]
}

// ForceFlush exports every span ended before it was called, waiting at most
// until ctx ends.
func (b *batcher) ForceFlush(ctx context.Context) error {
	flushed := make(chan struct{})
	select {
	case b.flushes <- flushed:
	case <-b.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flush spans: %w", ctx.Err())
	}
	select {
	case <-flushed:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flush spans: %w", ctx.Err())
	}
}

// Shutdown exports what waits and shuts the exporter down, waiting at most
// until ctx ends; spans ending after it are dropped. Only the first call
// does anything.
func (b *batcher) Shutdown(ctx context.Context) error {
	var err error
	b.stopOnce.Do(func() {
		b.mu.Lock()
		b.stopped = true
		b.mu.Unlock()
		close(b.stop)
		select {
		case <-b.done:
		case <-ctx.Done():
			err = fmt.Errorf("export the last spans: %w", ctx.Err())
			return
		}
		if e := b.exp.Shutdown(ctx); e != nil {
			err = fmt.Errorf("shut down the exporter: %w", e)
		}
	})
	return err
}
