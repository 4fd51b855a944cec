package forwarder

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

func BenchmarkPublishSpansExported(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	msgs := make([]sinks.Message, 100)
	for i := range msgs {
		msgs[i] = sinks.Message{ID: "m", Due: time.Now(), Attempt: 1, Headers: map[string]string{queue.HeaderTraceParent: sampled}}
	}
	s := &scanner{cfg: scannerConfig{Tracing: Tracing{Tracer: tp.Tracer("bench"), Destinations: map[string]Destination{"t": {"rabbitmq", "ex"}}}}, topic: Topic{Topic: queue.Topic{Name: "t"}}}
	d := &delivery{msgs: msgs, began: time.Now()}
	results := make([]error, len(d.msgs))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	for i := range b.N {
		d.spans = s.startSpans(d)
		d.spans.end(results, time.Now())
		if i%5 == 4 { // the batch processor exports 512 at a time and drops what its queue (2048) cannot hold
			if err := tp.ForceFlush(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tp.ForceFlush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N*len(d.msgs)), "cpu-ns/msg")
	_ = tp.Shutdown(context.Background())
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
