package queue

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

const (
	testTraceID    = "0af7651916cd43dd8448eb211c80319c"
	testParent     = "00-" + testTraceID + "-b7ad6b7169203331-01"
	testTraceState = "congo=t61rcWkgMzE"
)

// useW3C sets the global propagator a traced producer sets, for the test,
// and then one that writes nothing, as the default does. (The default
// cannot be put back: the first Set makes it a delegate for good.)
func useW3C(t *testing.T) {
	t.Helper()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator()) })
}

// spanContext is a context holding the (remote) span of testParent.
func spanContext(t *testing.T) context.Context {
	t.Helper()
	ctx := propagation.TraceContext{}.Extract(context.Background(),
		propagation.MapCarrier{HeaderTraceParent: testParent, HeaderTraceState: testTraceState})
	if !trace.SpanContextFromContext(ctx).IsValid() {
		t.Fatal("test span context is not valid")
	}
	return ctx
}

func (f *fixture) storedMessage(r Receipt) Message {
	f.t.Helper()
	m, err := f.tp.Decode(r.Member)
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

func TestScheduleStoresTheCallersTraceContextInTheEnvelope(t *testing.T) {
	useW3C(t)
	f := newFixture(t, FormatEnvelope, 1)
	headers := map[string]string{"tenant": "7"}
	r, err := f.q.Schedule(spanContext(t), f.tp, Message{ID: "a", Body: []byte("x"), Headers: headers}, In(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got := f.storedMessage(r).Headers
	if got[HeaderTraceParent] != testParent || got[HeaderTraceState] != testTraceState || got["tenant"] != "7" {
		t.Errorf("stored headers %v, want the trace context and tenant", got)
	}
	if len(headers) != 1 {
		t.Errorf("the caller's header map was written: %v", headers)
	}
}

func TestScheduleBatchAndEachStoreTheTraceContext(t *testing.T) {
	useW3C(t)
	f := newFixture(t, FormatEnvelope, 2)
	items := []Item{{Message: Message{ID: "a"}}, {Message: Message{ID: "b"}}}
	rs, err := f.q.ScheduleBatch(spanContext(t), f.tp, items)
	if err != nil {
		t.Fatal(err)
	}
	rs2, errs := f.q.ScheduleEach(spanContext(t), f.tp, []Item{{Message: Message{ID: "c"}}})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	for _, r := range append(rs, rs2...) {
		if got := f.storedMessage(r).Headers[HeaderTraceParent]; got != testParent {
			t.Errorf("%s: traceparent %q, want %q", r.ID, got, testParent)
		}
	}
	if items[0].Message.Headers != nil {
		t.Errorf("the caller's items were written: %v", items[0].Message.Headers)
	}
}

func TestScheduleKeepsTheCallersOwnTraceparent(t *testing.T) {
	useW3C(t)
	f := newFixture(t, FormatEnvelope, 1)
	own := "00-11111111111111111111111111111111-2222222222222222-01"
	r, err := f.q.Schedule(spanContext(t), f.tp, Message{ID: "a", Headers: map[string]string{HeaderTraceParent: own}}, In(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got := f.storedMessage(r).Headers
	if got[HeaderTraceParent] != own || got[HeaderTraceState] != "" {
		t.Errorf("stored %v, want only the caller's traceparent", got)
	}
}

// Without a span in the context the envelope is the member it always was
// (the memory bound holds), and a raw member never carries a context.
func TestScheduleWithoutTraceContextStoresTheSameMember(t *testing.T) {
	useW3C(t)
	f := newFixture(t, FormatEnvelope, 1)
	m := Message{ID: "a", Body: []byte("x")}
	r, err := f.q.Schedule(f.ctx, f.tp, m, In(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := EncodeEnvelope(m)
	if r.Member != string(want) {
		t.Errorf("member %s, want %s", r.Member, want)
	}
	raw := newFixture(t, FormatRaw, 1)
	r, err = raw.q.Schedule(spanContext(t), raw.tp, Message{Body: []byte("body")}, In(time.Hour))
	if err != nil || r.Member != "body" {
		t.Errorf("raw member %q (%v), want the body alone", r.Member, err)
	}
}

// A producer that set no tracer provider and no propagator pays nothing.
func TestWithTraceAllocatesNothingWithoutTracing(t *testing.T) {
	m := Message{ID: "a", Headers: map[string]string{"k": "v"}}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { m = withTrace(ctx, m) }); n != 0 {
		t.Errorf("withTrace allocates %v times per call without a span", n)
	}
	// The default global propagator writes nothing, even for a span.
	if got := withTrace(spanContext(t), m); len(got.Headers) != 1 {
		t.Errorf("the default propagator wrote %v", got.Headers)
	}
}

func TestRecurrenceStoresItsTraceContextForEveryTick(t *testing.T) {
	useW3C(t)
	f := newFixture(t, FormatRaw, 1)
	now := MillisTime(f.redisNow()).Add(-5 * time.Second)
	if _, err := f.q.setRecurrence(spanContext(t), f.tp, digest(), now); err != nil {
		t.Fatal(err)
	}
	c := f.claim(0, 10, time.Minute)
	if len(c.Messages) != 1 {
		t.Fatalf("claimed %d, want 1 tick", len(c.Messages))
	}
	m, err := f.tp.Decode(c.Messages[0].Member)
	if err != nil {
		t.Fatal(err)
	}
	if m.Headers[HeaderTraceParent] != testParent || m.Headers[HeaderRecurrence] != "digest" {
		t.Errorf("tick headers %v, want the recurrence's traceparent", m.Headers)
	}
}
