package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// traceBroker declares the test's exchange, its destination queue (routing
// key "out") and the intake's queue, and consumes the destination.
func traceBroker(t *testing.T, name string) (*amqp.Channel, <-chan amqp.Delivery) {
	t.Helper()
	conn, err := amqp.Dial(e2etest.AMQPURL())
	if err != nil {
		t.Fatalf("rabbitmq at %s is required: %v", e2etest.AMQPURL(), err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare(name, "direct", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.ExchangeDelete(name, false, false) })
	out, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(out.Name, "out", name, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(name+"-in", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(name+"-in", false, false, false) })
	msgs, err := ch.Consume(out.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ch, msgs
}

// producerTracing is the test's producer: a tracer provider exporting to
// Jaeger as service, and the W3C propagator, set globally for the test.
func producerTracing(t *testing.T, j *e2etest.Jaeger, service string) *sdktrace.TracerProvider {
	t.Helper()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(j.OTLP+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator()) })
	return tp
}

// consume continues the trace of n deliveries, as a consumer does: a span
// per delivery, child of its traceparent header. It returns the consumer
// spans by message id (a tick's by "tick").
func consume(t *testing.T, tracer trace.Tracer, msgs <-chan amqp.Delivery, n int) map[string]trace.SpanContext {
	t.Helper()
	out := map[string]trace.SpanContext{}
	timeout := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case m := <-msgs:
			carrier := propagation.MapCarrier{}
			for k, v := range m.Headers {
				if s, ok := v.(string); ok {
					carrier[k] = s
				}
			}
			ctx := otel.GetTextMapPropagator().Extract(context.Background(), carrier)
			_, span := tracer.Start(ctx, "consume "+m.MessageId, trace.WithSpanKind(trace.SpanKindConsumer))
			span.End()
			id, _, _ := strings.Cut(m.MessageId, "@")
			if _, seen := out[id]; !seen {
				out[id] = span.SpanContext()
			}
		case <-timeout:
			t.Fatalf("consumed %d of %d deliveries within 30 s: %v", len(out), n, out)
		}
	}
	return out
}

// spans waits until Jaeger holds want spans of trace id and returns them
// by span id.
func spans(t *testing.T, j *e2etest.Jaeger, id string, want int) map[string]e2etest.JaegerSpan {
	t.Helper()
	out := map[string]e2etest.JaegerSpan{}
	e2etest.WaitFor(t, 20*time.Second, "trace "+id+" in Jaeger", func() bool {
		for _, s := range j.Trace(t, id) {
			out[s.SpanID] = s
		}
		return len(out) >= want
	})
	return out
}

// parent is the span id s is a CHILD_OF, "" for a root.
func parent(s e2etest.JaegerSpan) string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// checkTrace checks that trace traceID runs producer (root) → request or
// receive span (HTTP API, intake) → publish → consumer, and that the
// publish span has its lateness.
func checkTrace(t *testing.T, j *e2etest.Jaeger, id, traceID, root string, consumer trace.SpanContext) {
	t.Helper()
	if consumer.TraceID().String() != traceID {
		t.Errorf("%s: the consumer's span is in trace %s, want the producer's %s", id, consumer.TraceID(), traceID)
		return
	}
	want := 3
	if id != "go" {
		want = 4 // the request's or the intake's span
	}
	all := spans(t, j, traceID, want)
	chain := []string{}
	for s, ok := all[consumer.SpanID().String()]; ok; s, ok = all[parent(s)] {
		chain = append([]string{s.OperationName}, chain...)
		if parent(s) == "" && s.SpanID != root {
			t.Errorf("%s: the trace's root is %s, want the producer's span %s", id, s.SpanID, root)
		}
		if strings.HasPrefix(s.OperationName, "send ") {
			if l, ok := s.Tag("delaybridge.lateness_ms").(float64); !ok || l < 0 || l > 5000 {
				t.Errorf("%s: publish span's delaybridge.lateness_ms = %v", id, s.Tag("delaybridge.lateness_ms"))
			}
		}
	}
	wantChain := map[string]string{
		"go":     "go producer > send " + "X > consume go",
		"http":   "http producer > POST /v1/topics/{topic}/messages > send X > consume http",
		"intake": "amqp producer > receive X > send X > consume intake",
	}[id]
	got := strings.Join(chain, " > ")
	t.Logf("%s: trace %s: %s", id, traceID, got)
	if !chainMatches(got, wantChain) {
		t.Errorf("%s: trace %s runs %q, want %q (X: any destination)", id, traceID, got, wantChain)
	}
}

// chainMatches compares operation chains, X matching any name.
func chainMatches(got, want string) bool {
	g, w := strings.Split(got, " > "), strings.Split(want, " > ")
	if len(g) != len(w) {
		return false
	}
	for i := range w {
		p, _ := strings.CutSuffix(w[i], "X")
		if !strings.HasPrefix(g[i], p) || (p == w[i] && g[i] != w[i]) {
			return false
		}
	}
	return true
}

// checkTick checks that a tick's publish is the root of a trace of its own,
// linked to the span that set the recurrence.
func checkTick(t *testing.T, j *e2etest.Jaeger, recur trace.SpanContext, consumed map[string]trace.SpanContext) {
	t.Helper()
	c := consumed["tick"]
	if c.TraceID() == recur.TraceID() {
		t.Fatalf("the tick is in the recurrence's trace %s: want a trace per tick", recur.TraceID())
	}
	all := spans(t, j, c.TraceID().String(), 2)
	pub, ok := all[parent(all[c.SpanID().String()])]
	if !ok || parent(pub) != "" || !strings.HasPrefix(pub.OperationName, "send ") {
		t.Fatalf("tick trace %s: consumer's parent %+v, want a root publish span", c.TraceID(), pub)
	}
	for _, r := range pub.References {
		if r.SpanID == recur.SpanID().String() && r.TraceID == recur.TraceID().String() {
			t.Logf("tick: trace %s: %s, %s to the recurrence's span %s", c.TraceID(), pub.OperationName, r.RefType, r.SpanID)
			return
		}
	}
	t.Errorf("tick publish span references %+v, want a link to the recurrence's span %s", pub.References, recur.SpanID())
}
