package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/queue"
)

const (
	testTraceID = "0af7651916cd43dd8448eb211c80319c"
	testParent  = "00-" + testTraceID + "-b7ad6b7169203331-01"
)

// tracedServer is the fixture's API with a tracer into a recorder (tracer
// nil: none), and the global propagator the daemon sets.
func tracedServer(t *testing.T, f *fixture, traced bool) (*Server, *tracetest.SpanRecorder) {
	t.Helper()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator()) })
	rec := tracetest.NewSpanRecorder()
	var tracer trace.Tracer
	if traced {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		t.Cleanup(func() { tp.Shutdown(context.Background()) })
		tracer = tp.Tracer("test")
	}
	srv, err := New(Options{Queue: f.q, Prefix: f.prefix, Tokens: []Token{{Secret: fullToken}}, Tracer: tracer})
	if err != nil {
		t.Fatal(err)
	}
	return srv, rec
}

func (f *fixture) scheduleTraced(srv *Server, id string) *httptest.ResponseRecorder {
	f.t.Helper()
	req := httptest.NewRequest("POST", "/v1/topics/orders/messages", strings.NewReader(`{"id":"`+id+`","body":"x","delay":"1h"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+fullToken)
	req.Header.Set("traceparent", testParent)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != http.StatusCreated {
		f.t.Fatalf("schedule: %d %s", w.Code, w.Body)
	}
	return w
}

func (f *fixture) storedTraceparent(id string) string {
	f.t.Helper()
	m, err := f.q.Get(context.Background(), f.orders, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return m.Message.Headers[queue.HeaderTraceParent]
}

// The request's span is a child of its traceparent, and the message stores
// the span's context, so the schedule is the start of the message's trace.
func TestScheduleRequestSpanIsStoredAsTheMessagesParent(t *testing.T) {
	f := newFixture(t)
	srv, rec := tracedServer(t, f, true)
	f.scheduleTraced(srv, "a")
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want the request's", len(spans))
	}
	s := spans[0]
	if s.Name() != "POST /v1/topics/{topic}/messages" || s.SpanKind() != trace.SpanKindServer ||
		s.Parent().TraceID().String() != testTraceID || s.Parent().SpanID().String() != "b7ad6b7169203331" {
		t.Errorf("span %q kind %v parent %v", s.Name(), s.SpanKind(), s.Parent())
	}
	got := map[string]string{}
	for _, kv := range s.Attributes() {
		got[string(kv.Key)] = kv.Value.String()
	}
	if got["http.response.status_code"] != "201" || got["http.route"] != "/v1/topics/{topic}/messages" || got["delaybridge.topic"] != "orders" {
		t.Errorf("attributes %v", got)
	}
	want := "00-" + testTraceID + "-" + s.SpanContext().SpanID().String() + "-01"
	if tp := f.storedTraceparent("a"); tp != want {
		t.Errorf("stored traceparent %q, want the request span's %q", tp, want)
	}
}

// Without a tracer the request's own traceparent is stored.
func TestScheduleStoresTheRequestsTraceparentWithoutATracer(t *testing.T) {
	f := newFixture(t)
	srv, _ := tracedServer(t, f, false)
	f.scheduleTraced(srv, "b")
	if tp := f.storedTraceparent("b"); tp != testParent {
		t.Errorf("stored traceparent %q, want the request's %q", tp, testParent)
	}
}
