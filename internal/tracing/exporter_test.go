package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP endpoint that keeps the requests it receives.
type collector struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []*coltracepb.ExportTraceServiceRequest
	errs []error
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		req := &coltracepb.ExportTraceServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(body, req)
		}
		c.mu.Lock()
		c.reqs = append(c.reqs, req)
		c.errs = append(c.errs, err)
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// last returns the last request received, failing on a bad one.
func (c *collector) last(t *testing.T) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.reqs) == 0 {
		t.Fatal("the collector received nothing")
	}
	if err := c.errs[len(c.errs)-1]; err != nil {
		t.Fatalf("the collector could not decode the request: %v", err)
	}
	return c.reqs[len(c.reqs)-1]
}

func (c *collector) client() otlptrace.Client {
	return otlptracehttp.NewClient(otlptracehttp.WithEndpointURL(c.srv.URL + "/v1/traces"))
}

// variedSpans are spans with every kind of field and attribute value the
// OTLP span has: remote and local parents, trace state, events, links,
// each status, dropped counts, several scopes, values long enough to need
// multi-byte lengths.
func variedSpans() tracetest.SpanStubs {
	res := resource.NewSchemaless(attribute.String("service.name", "delaybridge"),
		attribute.String("service.version", "test"), attribute.Int("n", 3))
	ts, _ := trace.ParseTraceState("vendor=abc,other=x")
	sc := func(tid, sid byte, flags trace.TraceFlags, remote bool, state trace.TraceState) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{tid, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
			SpanID:  trace.SpanID{sid, 1, 2, 3, 4, 5, 6, 7}, TraceFlags: flags, TraceState: state, Remote: remote,
		})
	}
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 123456789, time.UTC)
	long := strings.Repeat("x", 300)
	huge := strings.Repeat("y", 20000)
	publish := instrumentation.Scope{Name: "github.com/delaybridge/delaybridge/forwarder", Version: "v1"}
	api := instrumentation.Scope{Name: "api", Version: "2", SchemaURL: "https://opentelemetry.io/schemas/1.26.0",
		Attributes: attribute.NewSet(attribute.String("scope.attr", "a"), attribute.Bool("b", true))}
	return tracetest.SpanStubs{
		{
			Name: "orders publish", SpanContext: sc(1, 1, trace.FlagsSampled, false, ts), Parent: sc(1, 9, trace.FlagsSampled, true, ts),
			SpanKind: trace.SpanKindProducer, StartTime: t0, EndTime: t0.Add(1500 * time.Microsecond),
			Attributes: []attribute.KeyValue{
				attribute.String("messaging.system", "rabbitmq"),
				attribute.String("messaging.destination.name", "orders"),
				attribute.String("messaging.message.id", "01HZZZ"),
				attribute.String("messaging.operation.type", "send"),
				attribute.Int64("delaybridge.due_ms", 1_764_320_400_000),
				attribute.Int64("delaybridge.lateness_ms", 0),
				attribute.Int("delaybridge.attempt", 1),
				attribute.Int("delaybridge.slot", -7),
				attribute.Bool("delaybridge.tick", false),
				attribute.Float64("ratio", 0.25),
				attribute.StringSlice("ss", []string{"a", "", long}),
				attribute.Int64Slice("is", []int64{0, -1, 1 << 40}),
				attribute.Float64Slice("fs", []float64{0, 1.5}),
				attribute.BoolSlice("bs", []bool{true, false}),
				attribute.String("long", long),
				attribute.String("huge", huge),
				attribute.String("empty", ""),
			},
			Status:            sdktrace.Status{Code: codes.Error, Description: "broker refused: NOT_FOUND"},
			Events:            []sdktrace.Event{{Name: "dead-lettered", Time: t0.Add(time.Millisecond), Attributes: []attribute.KeyValue{attribute.String("reason", long)}, DroppedAttributeCount: 2}},
			DroppedAttributes: 1, DroppedEvents: 2, DroppedLinks: 3,
			Resource: res, InstrumentationScope: publish,
		},
		{
			Name: "tick", SpanContext: sc(2, 2, 0, false, trace.TraceState{}),
			SpanKind: trace.SpanKindProducer, StartTime: t0, EndTime: t0.Add(time.Second),
			Links: []sdktrace.Link{
				{SpanContext: sc(3, 3, trace.FlagsSampled, true, trace.TraceState{}), Attributes: []attribute.KeyValue{attribute.String("why", "recurrence")}, DroppedAttributeCount: 1},
				{SpanContext: sc(4, 4, 0, false, trace.TraceState{})},
			},
			Status:   sdktrace.Status{Code: codes.Ok},
			Resource: res, InstrumentationScope: publish,
		},
		{
			Name: "POST /v1/messages", SpanContext: sc(5, 5, trace.FlagsSampled, false, trace.TraceState{}), Parent: sc(5, 6, trace.FlagsSampled, false, trace.TraceState{}),
			SpanKind: trace.SpanKindServer, StartTime: t0, EndTime: t0.Add(time.Millisecond),
			Attributes: []attribute.KeyValue{attribute.Int("http.response.status_code", 201)},
			Resource:   res, InstrumentationScope: api,
		},
		{
			Name: "unscoped", SpanContext: sc(6, 6, trace.FlagsSampled, false, trace.TraceState{}),
			SpanKind: trace.SpanKind(42), StartTime: time.Unix(0, 0), EndTime: t0,
			Resource: res,
		},
		{
			Name: "orders publish 2", SpanContext: sc(1, 7, trace.FlagsSampled, false, ts), Parent: sc(1, 1, trace.FlagsSampled, false, ts),
			SpanKind: trace.SpanKindInternal, StartTime: t0, EndTime: t0,
			Resource: res, InstrumentationScope: publish,
		},
	}
}

// TestExporterSendsWhatTheSDKExporterSends exports the same spans through
// the SDK's OTLP/HTTP exporter and through ours, and compares what the
// collector decoded.
func TestExporterSendsWhatTheSDKExporterSends(t *testing.T) {
	ctx := context.Background()
	spans := variedSpans().Snapshots()

	theirs := newCollector(t)
	sdkExp, err := otlptrace.New(ctx, theirs.client())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sdkExp.Shutdown(ctx) }()
	if err := sdkExp.ExportSpans(ctx, spans); err != nil {
		t.Fatalf("SDK exporter: %v", err)
	}

	ours := newCollector(t)
	exp, err := newExporter(ctx, ours.client(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Shutdown(ctx) }()
	// Twice: the second batch reuses the buffer and the caches.
	for range 2 {
		if err := exp.ExportSpans(ctx, spans); err != nil {
			t.Fatalf("our exporter: %v", err)
		}
		want, got := theirs.last(t), ours.last(t)
		if !proto.Equal(want, got) {
			t.Fatalf("requests differ\nSDK exporter:\n%s\nours:\n%s", prototext.Format(want), prototext.Format(got))
		}
	}
	if n := len(ours.last(t).GetResourceSpans()[0].GetScopeSpans()); n != 3 {
		t.Errorf("%d scopes, want 3 (the comparison above would pass on nothing)", n)
	}
}

// TestExporterGroupsSpansByResource: spans of two resources go out as two
// ResourceSpans, each with its own spans, as the SDK's exporter sends them
// (whose order of resources is a map's: both are sorted before comparing).
func TestExporterGroupsSpansByResource(t *testing.T) {
	ctx := context.Background()
	stubs := variedSpans()
	other := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "other"))
	stubs[1].Resource, stubs[3].Resource = other, other
	spans := stubs.Snapshots()

	byService := func(req *coltracepb.ExportTraceServiceRequest) []*tracepb.ResourceSpans {
		rss := slices.Clone(req.GetResourceSpans())
		name := func(rs *tracepb.ResourceSpans) string {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					return kv.GetValue().GetStringValue()
				}
			}
			return ""
		}
		slices.SortFunc(rss, func(a, b *tracepb.ResourceSpans) int { return strings.Compare(name(a), name(b)) })
		return rss
	}

	theirs, ours := newCollector(t), newCollector(t)
	sdkExp, err := otlptrace.New(ctx, theirs.client())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sdkExp.Shutdown(ctx) }()
	exp, err := newExporter(ctx, ours.client(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Shutdown(ctx) }()
	if err := sdkExp.ExportSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	want, got := byService(theirs.last(t)), byService(ours.last(t))
	if len(got) != 2 {
		t.Fatalf("%d ResourceSpans, want 2", len(got))
	}
	for i := range want {
		if !proto.Equal(want[i], got[i]) {
			t.Errorf("resource %d differs\nSDK exporter:\n%s\nours:\n%s", i, prototext.Format(want[i]), prototext.Format(got[i]))
		}
	}
}

// TestExporterKeepsALinksTraceState: OTLP's Link has a trace_state, which
// the SDK's exporter leaves out; ours sends it.
func TestExporterKeepsALinksTraceState(t *testing.T) {
	ctx := context.Background()
	ts, _ := trace.ParseTraceState("vendor=abc")
	stubs := variedSpans()[1:2]
	stubs[0].Links[0].SpanContext = stubs[0].Links[0].SpanContext.WithTraceState(ts)
	c := newCollector(t)
	exp, err := newExporter(ctx, c.client(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Shutdown(ctx) }()
	if err := exp.ExportSpans(ctx, stubs.Snapshots()); err != nil {
		t.Fatal(err)
	}
	links := c.last(t).GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()[0].GetLinks()
	if len(links) != 2 || links[0].GetTraceState() != "vendor=abc" {
		t.Errorf("links %v: want the first with trace state vendor=abc", links)
	}
}

// TestExporterSendsNothingForNoSpans: an empty batch makes no request.
func TestExporterSendsNothingForNoSpans(t *testing.T) {
	ctx := context.Background()
	c := newCollector(t)
	exp, err := newExporter(ctx, c.client(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(ctx, []sdktrace.ReadOnlySpan{nil}); err != nil {
		t.Fatal(err)
	}
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.reqs) != 0 {
		t.Errorf("%d requests for no spans", len(c.reqs))
	}
}
