package tracing

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestExporterSendsOnlyValidUTF8WithinTheLimit: a span whose name,
// attribute keys and values hold invalid UTF-8 (a request path's %C0%AF)
// or 60 KB reaches the collector decodable (protobuf refuses a string that
// is not UTF-8: the whole batch would be lost), every string at most the
// limit, and the span beside it unchanged.
func TestExporterSendsOnlyValidUTF8WithinTheLimit(t *testing.T) {
	ctx := context.Background()
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})
	poisoned := "/v1/topics/\xc0\xaf/messages"
	stubs := tracetest.SpanStubs{
		{Name: "GET " + poisoned, SpanContext: sc, StartTime: time.Now(), EndTime: time.Now(),
			Attributes: []attribute.KeyValue{attribute.String("url.path", poisoned), attribute.String("big", strings.Repeat("é", 60000)),
				attribute.String("k\xff", "v"), attribute.StringSlice("many", []string{"ok", "\xfe"})}},
		{Name: "good", SpanContext: sc, StartTime: time.Now(), EndTime: time.Now(), Attributes: []attribute.KeyValue{attribute.String("a", "b")}},
	}
	c := newCollector(t)
	exp, err := newExporter(ctx, c.client(), 256)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Shutdown(ctx) }()
	if err := exp.ExportSpans(ctx, stubs.Snapshots()); err != nil {
		t.Fatal(err)
	}
	spans := c.last(t).GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()
	if len(spans) != 2 || spans[1].GetName() != "good" {
		t.Fatalf("spans %v: want the poisoned one and the good one", spans)
	}
	check := func(what, s string) {
		if !utf8.ValidString(s) || utf8.RuneCountInString(s) > 256 {
			t.Errorf("%s: %d characters, valid UTF-8 %v", what, utf8.RuneCountInString(s), utf8.ValidString(s))
		}
	}
	check("name", spans[0].GetName())
	for _, kv := range spans[0].GetAttributes() {
		check("key", kv.GetKey())
		check(kv.GetKey(), kv.GetValue().GetStringValue())
		for _, v := range kv.GetValue().GetArrayValue().GetValues() {
			check(kv.GetKey()+"[]", v.GetStringValue())
		}
	}
	if got := spans[0].GetAttributes()[1].GetValue().GetStringValue(); got != strings.Repeat("é", 256) {
		t.Errorf("a long value cut to %d characters, want 256 whole ones", utf8.RuneCountInString(got))
	}
}

// TestSpansHeldAreBoundedInBytes: while the exporter is stuck, spans are
// dropped once those waiting hold maxBytes, however few they are.
func TestSpansHeldAreBoundedInBytes(t *testing.T) {
	exp := &recordingExporter{hold: make(chan struct{}), entered: make(chan struct{}, 1)}
	seen := &errorsSeen{}
	b := newBatcher(exp, batchConfig{delay: time.Hour, timeout: time.Second, maxQueue: 1000, maxBatch: 1}, seen.handle)
	b.maxBytes = 1 << 20
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := tp.Tracer("test")
	for range 100 {
		_, span := tr.Start(context.Background(), "big", trace.WithAttributes(attribute.String("v", strings.Repeat("x", 60<<10))))
		span.End()
	}
	close(exp.hold)
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := exp.exported()
	if got < 10 || got > 17 {
		t.Errorf("%d spans of 60 KiB exported with 1 MiB held at most: want about 16", got)
	}
	if err := seen.joined(); err == nil || !strings.Contains(err.Error(), "dropped") {
		t.Errorf("reported %v, want the dropped spans", err)
	}
}

func TestAttributeValueLengthLimitVariables(t *testing.T) {
	for _, tc := range []struct {
		vars map[string]string
		want int
		bad  string
	}{
		{nil, DefaultValueLimit, ""},
		{map[string]string{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "1000"}, 1000, ""},
		{map[string]string{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "1000", "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "64"}, 64, ""},
		{map[string]string{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "0"}, 0, "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"},
		{map[string]string{"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "big"}, 0, "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT"},
	} {
		n, err := readValueLimit(env(tc.vars))
		if tc.bad != "" {
			if cerr := Check(env(tc.vars)); err == nil || cerr == nil || !strings.Contains(cerr.Error(), tc.bad) {
				t.Errorf("%v: %v / Check %v, want an error naming %s", tc.vars, err, cerr, tc.bad)
			}
			continue
		}
		if err != nil || n != tc.want {
			t.Errorf("%v: %d, %v; want %d", tc.vars, n, err, tc.want)
		}
	}
}
