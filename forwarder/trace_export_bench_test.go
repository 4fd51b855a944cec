package forwarder

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/internal/tracing"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// BenchmarkPublishSpansExported measures a delivered message's spans from
// start to the collector: the daemon's exporter (internal/tracing, as
// Setup builds it from the OTEL_* variables) beside the SDK's OTLP/HTTP
// exporter it replaced.
func BenchmarkPublishSpansExported(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	ctx := context.Background()
	b.Run("exporter=daemon", func(b *testing.B) {
		b.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", srv.URL+"/v1/traces") // the OTLP client reads the process's variables
		tr, err := tracing.Setup(ctx, os.Getenv, "bench", slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = tr.Shutdown(ctx) }()
		benchmarkPublishSpans(b, tr.Provider.Tracer("bench"), tr.ForceFlush)
	})
	b.Run("exporter=sdk", func(b *testing.B) {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
		if err != nil {
			b.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		defer func() { _ = tp.Shutdown(ctx) }()
		benchmarkPublishSpans(b, tp.Tracer("bench"), tp.ForceFlush)
	})
}

func benchmarkPublishSpans(b *testing.B, tracer trace.Tracer, flush func(context.Context) error) {
	msgs := make([]sinks.Message, 100)
	for i := range msgs {
		msgs[i] = sinks.Message{ID: "m", Due: time.Now(), Attempt: 1, Headers: map[string]string{queue.HeaderTraceParent: sampled}}
	}
	s := &scanner{cfg: scannerConfig{Tracing: Tracing{Tracer: tracer, Destinations: map[string]Destination{"t": {"rabbitmq", "ex"}}}}, topic: Topic{Topic: queue.Topic{Name: "t"}}}
	d := &delivery{msgs: msgs, began: time.Now()}
	results := make([]error, len(d.msgs))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	for i := range b.N {
		d.spans = s.startSpans(d)
		d.spans.end(results, time.Now())
		if i%5 == 4 { // the batch processor exports 512 at a time and drops what its queue (2048) cannot hold
			if err := flush(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N*len(d.msgs)), "cpu-ns/msg")
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
