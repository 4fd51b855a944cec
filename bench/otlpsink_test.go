package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestOTLPSinkCountsTheSpansAnExporterSent: the SDK's OTLP/HTTP exporter,
// plain and gzipped, exports to the sink, which answers as a collector
// (the exporter reports no error) and counts every export and span.
func TestOTLPSinkCountsTheSpansAnExporterSent(t *testing.T) {
	for _, gz := range []bool{false, true} {
		sink, err := startOTLPSink()
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(sink.endpoint() + "/v1/traces")}
		if gz {
			opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		}
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithMaxExportBatchSize(100)))
		tr := tp.Tracer("a")
		other := tp.Tracer("b") // a second scope in the same export
		for i := range 250 {
			_, span := tr.Start(ctx, "send")
			span.End()
			if i%5 == 0 {
				_, span := other.Start(ctx, "claim")
				span.End()
			}
		}
		if err := tp.Shutdown(ctx); err != nil { // flushes; an error if the sink refused
			t.Fatalf("gzip %v: export: %v", gz, err)
		}
		got := sink.counts()
		sink.close()
		if got.Spans != 300 || got.Requests < 3 || got.Bytes == 0 || got.Bad != 0 {
			t.Errorf("gzip %v: sink counted %+v; want 300 spans in at least 3 requests, bytes, none bad", gz, got)
		}
	}
}

func TestOTLPSinkRefusesWhatIsNoTraceExport(t *testing.T) {
	sink, err := startOTLPSink()
	if err != nil {
		t.Fatal(err)
	}
	defer sink.close()
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{http.MethodGet, "/v1/traces", "", http.StatusNotFound},
		{http.MethodPost, "/v1/metrics", "", http.StatusNotFound},
		{http.MethodPost, "/v1/traces", "\x0a\xff", http.StatusBadRequest}, // a field longer than the body
	} {
		req, err := http.NewRequest(c.method, sink.endpoint()+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s: status %d, want %d", c.method, c.path, resp.StatusCode, c.want)
		}
	}
	if got := sink.counts(); got.Bad != 3 || got.Requests != 0 {
		t.Errorf("sink counted %+v; want 3 bad, no export", got)
	}
}

func TestCountSpansOfAnEmptyExport(t *testing.T) {
	if n, err := countSpans(nil); n != 0 || err != nil {
		t.Errorf("countSpans(nil) = %d, %v", n, err)
	}
}
