package forwarder

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

const (
	traceID    = "0af7651916cd43dd8448eb211c80319c"
	parentSpan = "b7ad6b7169203331"
	sampled    = "00-" + traceID + "-" + parentSpan + "-01"
)

// traced returns forwarder tracing into an in-memory recorder.
func traced(t *testing.T, topic string) (Tracing, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return Tracing{Tracer: tp.Tracer("test"), Destinations: map[string]Destination{
		topic: {System: "rabbitmq", Name: "ex"}}}, rec
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

func spansNamed(rec *tracetest.SpanRecorder, prefix string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if strings.HasPrefix(s.Name(), prefix) {
			out = append(out, s)
		}
	}
	return out
}

func scheduleEnvelope(t *testing.T, q *queue.Queue, topic queue.Topic, m queue.Message, when queue.When) {
	t.Helper()
	if _, err := q.Schedule(context.Background(), topic, m, when); err != nil {
		t.Fatal(err)
	}
}

func TestPublishSpanIsAChildOfTheSchedulingContextWithItsAttributes(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := newRecordSink()
	topic := queue.Topic{Name: "t", Prefix: prefix, Format: queue.FormatEnvelope}
	tr, rec := traced(t, "t")
	due := time.Now().Add(-2 * time.Second).Truncate(time.Millisecond)
	scheduleEnvelope(t, q, topic, queue.Message{ID: "m1", Body: []byte("x"),
		Headers: map[string]string{queue.HeaderTraceParent: sampled, queue.HeaderTraceState: "a=b"}}, queue.At(due))
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true,
		PollInterval: 20 * time.Millisecond, Tracing: tr})
	eventually(t, 10*time.Second, "published and its span ended", func() bool {
		return len(sink.published()) == 1 && len(spansNamed(rec, "send")) == 1
	})
	span := spansNamed(rec, "send ex")[0]
	if span.SpanKind() != trace.SpanKindProducer || span.Parent().TraceID().String() != traceID ||
		span.Parent().SpanID().String() != parentSpan || span.SpanContext().TraceID().String() != traceID {
		t.Errorf("span %s kind %v parent %v: want a producer child of %s", span.Name(), span.SpanKind(), span.Parent(), sampled)
	}
	a := attrs(span)
	if n := len(span.Attributes()); n != publishAttrs || publishAttrs > 8 {
		t.Errorf("%d attributes (publishAttrs %d): a delivered message's span has 8, the SDK's dedupe map's small size (trace.go)", n, publishAttrs)
	}
	for k, want := range map[attribute.Key]string{"messaging.system": "rabbitmq", "messaging.destination.name": "ex",
		"messaging.message.id": "m1", "messaging.operation.type": "send",
		AttrDue: due.UTC().Format(time.RFC3339Nano)} {
		if got := a[k].AsString(); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if a[AttrSlot].AsInt64() != 0 || a[AttrAttempt].AsInt64() != 1 {
		t.Errorf("slot %v attempt %v, want 0 and 1", a[AttrSlot], a[AttrAttempt])
	}
	if l := a[AttrLateness].AsInt64(); l < 1900 || l > 10000 {
		t.Errorf("lateness %d ms, want about 2000", l)
	}
	if span.Status().Code == codes.Error {
		t.Errorf("status %v on a confirmed publish", span.Status())
	}
	h := sink.published()[0].msg.Headers
	want := "00-" + traceID + "-" + span.SpanContext().SpanID().String() + "-01"
	if h[queue.HeaderTraceParent] != want || h[queue.HeaderTraceState] != "a=b" {
		t.Errorf("delivered trace headers %v, want traceparent %s (the publish span) and the tracestate", h, want)
	}
}

func TestRetriesAreSpansOfTheSameTraceAndTheDeadLetteringIsOne(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := newRecordSink()
	sink.fail = func(m sinks.Message) error { return errors.New("unroutable: 312 NO_ROUTE") }
	topic := queue.Topic{Name: "t", Prefix: prefix, Format: queue.FormatEnvelope}
	tr, rec := traced(t, "t")
	scheduleEnvelope(t, q, topic, queue.Message{ID: "m1", Headers: map[string]string{queue.HeaderTraceParent: sampled}},
		queue.At(time.Now()))
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true,
		MaxAttempts: 2, RetryBackoff: 20 * time.Millisecond, PollInterval: 20 * time.Millisecond, Tracing: tr})
	eventually(t, 15*time.Second, "a dead-letter span", func() bool { return len(spansNamed(rec, "dead-letter")) == 1 })
	sends := spansNamed(rec, "send ex")
	if len(sends) != 2 {
		t.Fatalf("%d send spans, want one per attempt (2)", len(sends))
	}
	for i, s := range sends {
		if s.Parent().SpanID().String() != parentSpan || s.SpanContext().TraceID().String() != traceID {
			t.Errorf("attempt %d: parent %v, want %s", i+1, s.Parent(), sampled)
		}
		if got := attrs(s)[AttrAttempt].AsInt64(); got != int64(i+1) {
			t.Errorf("span %d: attempt %d", i, got)
		}
		if st := s.Status(); st.Code != codes.Error || st.Description != "unroutable: 312 NO_ROUTE" {
			t.Errorf("attempt %d: status %v, want error with the reason", i+1, st)
		}
		if got := attrs(s)[AttrOutcome].AsString(); got != "broker" {
			t.Errorf("attempt %d: outcome %q", i+1, got)
		}
	}
	dead := spansNamed(rec, "dead-letter")[0]
	if dead.Parent().SpanID() != sends[1].SpanContext().SpanID() || dead.Status().Code != codes.Error ||
		attrs(dead)[AttrReason].AsString() != "unroutable: 312 NO_ROUTE" {
		t.Errorf("dead-letter span parent %v status %v attrs %v: want the last attempt's child with the reason",
			dead.Parent(), dead.Status(), dead.Attributes())
	}
}

func TestRecurrenceTickStartsANewTraceLinkedToTheRecurrence(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := newRecordSink()
	topic := queue.Topic{Name: "t", Prefix: prefix}
	tr, rec := traced(t, "t")
	r := queue.Recurrence{ID: "digest", Spec: "@every 1s",
		Message: queue.Message{Body: []byte("d"), Headers: map[string]string{queue.HeaderTraceParent: sampled}}}
	if _, err := q.SetRecurrence(context.Background(), topic, r); err != nil {
		t.Fatal(err)
	}
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true,
		PollInterval: 20 * time.Millisecond, Tracing: tr})
	eventually(t, 10*time.Second, "two ticks' spans", func() bool { return len(spansNamed(rec, "send")) >= 2 })
	sends := spansNamed(rec, "send")
	if sends[0].SpanContext().TraceID() == sends[1].SpanContext().TraceID() {
		t.Errorf("two ticks share trace %s: want a trace per tick", sends[0].SpanContext().TraceID())
	}
	for _, s := range sends[:2] {
		if s.Parent().IsValid() {
			t.Errorf("tick span has parent %v, want a new root", s.Parent())
		}
		if l := s.Links(); len(l) != 1 || l[0].SpanContext.SpanID().String() != parentSpan ||
			l[0].SpanContext.TraceID().String() != traceID {
			t.Errorf("tick span links %v, want one to %s", l, sampled)
		}
		if got := attrs(s)[AttrRecurring].AsString(); got != "digest" {
			t.Errorf("recurrence attribute %q", got)
		}
	}
}

// An unsampled parent gives an unsampled publish (ParentBased): no span is
// recorded, and the delivered traceparent says so; a raw member gets a new
// trace of its own.
func TestPublishFollowsTheParentsSampledFlagAndRawMembersStartATrace(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := newRecordSink()
	env := queue.Topic{Name: "t", Prefix: prefix, Format: queue.FormatEnvelope}
	raw := queue.Topic{Name: "r", Prefix: prefix}
	tr, rec := traced(t, "t")
	unsampled := "00-" + traceID + "-" + parentSpan + "-00"
	scheduleEnvelope(t, q, env, queue.Message{ID: "m1", Headers: map[string]string{queue.HeaderTraceParent: unsampled}}, queue.At(time.Now()))
	if _, err := q.ScheduleMember(context.Background(), raw, []byte("body"), queue.At(time.Now())); err != nil {
		t.Fatal(err)
	}
	start(t, Options{Queue: q, Topics: []Topic{{env, sink}, {raw, sink}}, KeyPrefix: prefix, AllSlots: true,
		PollInterval: 20 * time.Millisecond, Tracing: tr})
	eventually(t, 10*time.Second, "both published", func() bool { return len(sink.published()) == 2 })
	eventually(t, 5*time.Second, "the raw member's span", func() bool { return len(rec.Ended()) >= 1 })
	for _, p := range sink.published() {
		tp := p.msg.Headers[queue.HeaderTraceParent]
		switch p.msg.Topic {
		case "t":
			if !strings.HasPrefix(tp, "00-"+traceID+"-") || !strings.HasSuffix(tp, "-00") || strings.Contains(tp, parentSpan) {
				t.Errorf("unsampled delivery traceparent %q, want a new span of %s, unsampled", tp, traceID)
			}
		case "r":
			if len(tp) != 55 || strings.Contains(tp, traceID) || !strings.HasSuffix(tp, "-01") {
				t.Errorf("raw delivery traceparent %q, want a new sampled trace", tp)
			}
		}
	}
	if n := len(rec.Ended()); n != 1 || rec.Ended()[0].Parent().IsValid() {
		t.Errorf("%d spans recorded, want only the raw member's root span", n)
	}
}

// Tracing off: the producer's trace context is delivered as it was stored,
// and preparing a delivery's spans costs nothing.
func TestNoTracingDeliversTheStoredContextAndAllocatesNothing(t *testing.T) {
	q, prefix := testRedis(t)
	sink := newRecordSink()
	topic := queue.Topic{Name: "t", Prefix: prefix, Format: queue.FormatEnvelope}
	scheduleEnvelope(t, q, topic, queue.Message{ID: "m1", Headers: map[string]string{queue.HeaderTraceParent: sampled}}, queue.At(time.Now()))
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true, PollInterval: 20 * time.Millisecond})
	eventually(t, 10*time.Second, "published", func() bool { return len(sink.published()) == 1 })
	if got := sink.published()[0].msg.Headers[queue.HeaderTraceParent]; got != sampled {
		t.Errorf("traceparent %q, want the stored %q", got, sampled)
	}
	s := &scanner{}
	d := &delivery{msgs: []sinks.Message{{ID: "a"}}}
	if n := testing.AllocsPerRun(100, func() {
		d.spans = s.startSpans(d)
		d.spans.end(nil, time.Time{})
		s.traceDead(nil, nil, []queue.Outcome{queue.Dead})
	}); n != 0 {
		t.Errorf("tracing off allocates %v times per delivery", n)
	}
}

// BenchmarkPublishSpans is the tracing cost per message of a batch of 100
// (start, inject, end; the batch processor's export is not counted): off,
// and on with every span sampled.
func BenchmarkPublishSpans(b *testing.B) {
	msgs := func() []sinks.Message {
		out := make([]sinks.Message, 100)
		for i := range out {
			out[i] = sinks.Message{ID: "m", Due: time.Now(), Attempt: 1,
				Headers: map[string]string{queue.HeaderTraceParent: sampled}}
		}
		return out
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	for _, bc := range []struct {
		name string
		tr   Tracing
	}{{"off", Tracing{}}, {"on", Tracing{Tracer: tp.Tracer("bench"), Destinations: map[string]Destination{"t": {"rabbitmq", "ex"}}}}} {
		b.Run(bc.name, func(b *testing.B) {
			s := &scanner{cfg: scannerConfig{Tracing: bc.tr}, topic: Topic{Topic: queue.Topic{Name: "t"}}}
			d := &delivery{msgs: msgs(), began: time.Now()}
			results := make([]error, len(d.msgs))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU(b)
			for range b.N {
				d.spans = s.startSpans(d)
				d.spans.end(results, time.Now())
			}
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N*len(d.msgs)), "cpu-ns/msg")
		})
	}
}
