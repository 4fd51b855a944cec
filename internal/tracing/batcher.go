package tracing

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// batcher is the daemon's span processor: it exports the ended sampled
// spans in batches, as the SDK's batch span processor does, with the same
// OTEL_BSP_* variables and defaults, but an ended span costs an append under
// a lock, not a channel send that wakes the exporting goroutine: that
// goroutine wakes when a batch is full or the schedule delay has passed.
// At a steady 2,000 messages a second the SDK's processor woke it for every
// span, a goroutine switch per delivered message (docs/performance.md).
//
// Like the SDK's, it drops spans when its queue is full (counting them, and
// saying so at the next export): span volume is bounded there and by the
// sampler, never by holding a message.
type batcher struct {
	exp                 sdktrace.SpanExporter
	delay, timeout      time.Duration
	maxQueue, maxExport int
	// report is told of a failed export and of spans dropped for a full
	// queue (otel.Handle: the SDK's processor reports to it too).
	report func(error)

	mu      sync.Mutex
	queue   []sdktrace.ReadOnlySpan
	dropped atomic.Int64
	// exporting serialises exports (the exporter's calls must not overlap).
	exporting sync.Mutex

	full     chan struct{} // cap 1: a batch is waiting
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// batcherOptions are the processor's settings: OTEL_BSP_SCHEDULE_DELAY,
// OTEL_BSP_EXPORT_TIMEOUT (ms), OTEL_BSP_MAX_QUEUE_SIZE and
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE, with the SDK's defaults (5000, 30000,
// 2048, 512).
type batcherOptions struct {
	Delay, Timeout      time.Duration
	MaxQueue, MaxExport int
}

// batcherEnv reads the OTEL_BSP_* variables; a bad one is an error naming
// it.
func batcherEnv(getenv func(string) string) (batcherOptions, error) {
	o := batcherOptions{Delay: 5 * time.Second, Timeout: 30 * time.Second, MaxQueue: 2048, MaxExport: 512}
	var errs []error
	num := func(name string, min int, set func(int)) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < min {
			errs = append(errs, fmt.Errorf("%s=%q: want a whole number ≥ %d", name, v, min))
			return
		}
		set(n)
	}
	num("OTEL_BSP_SCHEDULE_DELAY", 1, func(n int) { o.Delay = time.Duration(n) * time.Millisecond })
	num("OTEL_BSP_EXPORT_TIMEOUT", 1, func(n int) { o.Timeout = time.Duration(n) * time.Millisecond })
	num("OTEL_BSP_MAX_QUEUE_SIZE", 1, func(n int) { o.MaxQueue = n })
	num("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1, func(n int) { o.MaxExport = n })
	if o.MaxExport > o.MaxQueue {
		o.MaxExport = o.MaxQueue
	}
	return o, errors.Join(errs...)
}

// newBatcher starts the processor's exporting goroutine; Shutdown ends it.
func newBatcher(exp sdktrace.SpanExporter, o batcherOptions, report func(error)) *batcher {
	b := &batcher{
		exp: exp, delay: o.Delay, timeout: o.Timeout, maxQueue: o.MaxQueue, maxExport: o.MaxExport, report: report,
		queue: make([]sdktrace.ReadOnlySpan, 0, o.MaxExport),
		full:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go b.run()
	return b
}

// OnStart does nothing: spans are exported when they end.
func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span; a full queue drops it.
func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if len(b.queue) >= b.maxQueue {
		b.mu.Unlock()
		b.dropped.Add(1)
		return
	}
	b.queue = append(b.queue, s)
	n := len(b.queue)
	b.mu.Unlock()
	if n == b.maxExport {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
}

// run exports a batch when one is full, and whatever is queued every
// schedule delay, until Shutdown.
func (b *batcher) run() {
	defer close(b.done)
	t := time.NewTicker(b.delay)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-b.full:
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		if err := b.export(ctx); err != nil {
			b.report(err)
		}
		cancel()
	}
}

// export sends everything queued, a batch at a time.
func (b *batcher) export(ctx context.Context) error {
	b.exporting.Lock()
	defer b.exporting.Unlock()
	if n := b.dropped.Swap(0); n > 0 {
		b.report(fmt.Errorf("dropped %d spans: the export queue (OTEL_BSP_MAX_QUEUE_SIZE=%d) was full", n, b.maxQueue))
	}
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.maxExport)
		if n == 0 {
			b.mu.Unlock()
			return nil
		}
		batch := make([]sdktrace.ReadOnlySpan, n)
		copy(batch, b.queue)
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		b.mu.Unlock()
		if err := b.exp.ExportSpans(ctx, batch); err != nil {
			return fmt.Errorf("export %d spans: %w", n, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// ForceFlush exports everything queued now.
func (b *batcher) ForceFlush(ctx context.Context) error {
	return b.export(ctx)
}

// Shutdown stops the exporting goroutine, exports what is queued and shuts
// the exporter down.
func (b *batcher) Shutdown(ctx context.Context) error {
	var err error
	b.stopOnce.Do(func() {
		close(b.stop)
		select {
		case <-b.done:
		case <-ctx.Done():
		}
		err = errors.Join(b.export(ctx), b.exp.Shutdown(ctx))
	})
	return err
}
