package intake

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/queue"
)

// Each message taken in gets a receive span, child of its traceparent; the
// envelope stores the span's context; a message sent to the dead set has
// an error span with the reason.
func TestIntakeReceiveSpanIsTheStoredParentAndRejectionsAreErrors(t *testing.T) {
	f := newFixture(t, 1)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	q := queue.New(f.rdb)
	s := &scheduler{q: q, target: Target{Topic: f.topic, MaxBody: 4, Tracer: tp.Tracer("test")}, metrics: f.metrics,
		log: testLog(t), source: source{"rabbitmq", "delayed"}}
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	items := []item{
		{msg: queue.Message{ID: "ok", Body: []byte("x"), Headers: map[string]string{"traceparent": parent}}, when: queue.In(time.Hour)},
		{msg: queue.Message{ID: "big", Body: []byte("too large")}, when: queue.In(time.Hour)},
	}
	for i, err := range s.put(context.Background(), items) {
		if err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want one per message", len(spans))
	}
	ok, big := spans[0], spans[1]
	if ok.Name() != "receive delayed" || ok.SpanKind() != trace.SpanKindConsumer ||
		ok.Parent().SpanID().String() != "b7ad6b7169203331" || ok.Status().Code == codes.Error {
		t.Errorf("span %q kind %v parent %v status %v", ok.Name(), ok.SpanKind(), ok.Parent(), ok.Status())
	}
	info, err := q.Get(context.Background(), f.topic, "ok")
	if err != nil {
		t.Fatal(err)
	}
	want := "00-0af7651916cd43dd8448eb211c80319c-" + ok.SpanContext().SpanID().String() + "-01"
	if got := info.Message.Headers["traceparent"]; got != want {
		t.Errorf("stored traceparent %q, want the receive span's %q", got, want)
	}
	if big.Parent().IsValid() || big.Status().Code != codes.Error {
		t.Errorf("rejected message's span: parent %v status %v, want a root with an error", big.Parent(), big.Status())
	}
}
