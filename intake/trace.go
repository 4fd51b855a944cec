package intake

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/queue"
)

// An incoming message's W3C trace context (its traceparent and tracestate
// headers) is kept with its envelope like any header, so it is stored
// whether or not the daemon traces. With a tracer, each message gets a
// receive span, child of that context, and the envelope stores the span's
// context instead: the schedule is then a step of the producer's trace.

// w3c reads and writes the trace context of a message's headers.
var w3c = propagation.TraceContext{}

// source names where an intake reads, for its spans.
type source struct {
	system string // messaging.system: "rabbitmq" or "kafka"
	name   string // the queue or Kafka topic
}

// startSpans starts a receive span per item and writes its context into the
// item's headers; nil, doing nothing, without a tracer.
func (s *scheduler) startSpans(items []item) []trace.Span {
	tr := s.target.Tracer
	if tr == nil {
		return nil
	}
	spans := make([]trace.Span, len(items))
	for i := range items {
		m := &items[i].msg
		parent := w3c.Extract(context.Background(), propagation.MapCarrier(m.Headers))
		ctx, span := tr.Start(parent, "receive "+s.source.name, trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(
				attribute.String("messaging.system", s.source.system),
				attribute.String("messaging.destination.name", s.source.name),
				attribute.String("messaging.operation.type", "receive"),
				attribute.String("messaging.message.id", m.ID),
				attribute.String("delaybridge.topic", s.target.Topic.Name)))
		spans[i] = span
		if m.Headers == nil {
			m.Headers = make(map[string]string, 2)
		}
		delete(m.Headers, queue.HeaderTraceState)
		w3c.Inject(ctx, propagation.MapCarrier(m.Headers))
	}
	return spans
}

// endSpans ends the spans of put's items: a Redis failure or a rejection
// (the message went to the dead set) is an error with its reason.
func endSpans(spans []trace.Span, items []item, errs []error) {
	for i, span := range spans {
		switch {
		case errs[i] != nil:
			span.SetStatus(codes.Error, errs[i].Error())
		case items[i].reason != "":
			span.SetAttributes(attribute.String("delaybridge.dead_reason", items[i].reason))
			span.SetStatus(codes.Error, "dead-lettered: "+items[i].why)
		}
		span.End()
	}
}
