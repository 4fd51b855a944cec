package queue

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"
)

// Trace context travels with an envelope as two (or three) of its headers,
// the W3C names: traceparent, tracestate and baggage. A daemon that traces
// reads them as the parent of its publish span and replaces them on the
// published message with its own span's; one that does not (tracing off, or
// a version before tracing) delivers them as they are, so a consumer still
// continues the producer's trace. Raw members carry none (they are only a
// body), and an envelope without trace context is the member it always was.

// Header names of W3C trace context.
const (
	HeaderTraceParent = "traceparent"
	HeaderTraceState  = "tracestate"
	HeaderBaggage     = "baggage"
)

// withTrace returns m with the trace context of ctx in its headers, as the
// global OpenTelemetry propagator (otel.GetTextMapPropagator) writes it.
// It returns m unchanged, allocating nothing, when ctx holds no span
// context and no baggage (a producer that set up no tracing), or when m's
// headers already hold a traceparent (the caller's own wins). The caller's
// header map is never written: a new one is made.
func withTrace(ctx context.Context, m Message) Message {
	if !traced(ctx) {
		return m
	}
	if _, ok := m.Headers[HeaderTraceParent]; ok {
		return m
	}
	c := headerCarrier{orig: m.Headers}
	otel.GetTextMapPropagator().Inject(ctx, &c)
	if c.out != nil {
		m.Headers = c.out
	}
	return m
}

// traced reports whether ctx holds anything a propagator would write.
func traced(ctx context.Context) bool {
	return trace.SpanContextFromContext(ctx).IsValid() || baggage.FromContext(ctx).Len() > 0
}

// withTraceItems is withTrace for every item; items itself is copied, not
// written, when there is a context to add.
func withTraceItems(ctx context.Context, items []Item) []Item {
	if !traced(ctx) {
		return items
	}
	out := make([]Item, len(items))
	for i, it := range items {
		it.Message = withTrace(ctx, it.Message)
		out[i] = it
	}
	return out
}

// headerCarrier is a propagation.TextMapCarrier over a message's headers
// that copies them on the first Set.
type headerCarrier struct {
	orig, out map[string]string
}

func (c *headerCarrier) Get(key string) string {
	if c.out != nil {
		return c.out[key]
	}
	return c.orig[key]
}

func (c *headerCarrier) Set(key, value string) {
	if c.out == nil {
		c.out = make(map[string]string, len(c.orig)+2)
		maps.Copy(c.out, c.orig)
	}
	c.out[key] = value
}

func (c *headerCarrier) Keys() []string {
	if c.out != nil {
		return keys(c.out)
	}
	return keys(c.orig)
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
