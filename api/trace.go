package api

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// w3c reads a request's W3C trace context (traceparent, tracestate).
var w3c = propagation.TraceContext{}

// startSpan puts the request's trace context into its context, so what it
// schedules carries it (queue stores it with the envelope), and, with a
// Tracer, starts the request's server span as its child: the schedule then
// carries the span's context. A request without a traceparent and a
// server without a tracer cost nothing.
//
// The span starts before authentication, so it carries nothing the caller
// chose: the route's template (never the path), the method when it is one
// the API knows ("_OTHER" else) and, later, the status. The topic is added
// once the request is authorised for it (topicRoute: spanTopic).
func (s *Server) startSpan(r *http.Request, route string) (*http.Request, trace.Span) {
	if route == "" {
		route = "unmatched"
	}
	ctx := r.Context()
	if r.Header.Get("traceparent") != "" {
		ctx = w3c.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	if s.opts.Tracer == nil {
		if ctx == r.Context() {
			return r, nil
		}
		return r.WithContext(ctx), nil
	}
	method := spanMethod(r.Method)
	ctx, span := s.opts.Tracer.Start(ctx, method+" "+routePath(route), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", method), attribute.String("http.route", routePath(route))))
	return r.WithContext(ctx), span
}

// spanTopic names the topic on a request's span, once the request is
// authorised for it and the topic is registered: a name the operator
// chose, not any caller.
func spanTopic(r *http.Request, topic string) {
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
		span.SetAttributes(attribute.String("delaybridge.topic", topic))
	}
}

// spanMethod is a request's method for a span: a method no route serves is
// "_OTHER" (OpenTelemetry's HTTP conventions), so a caller cannot name
// spans.
func spanMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// endSpan ends a request's span with its status code (a 5xx is an error).
func endSpan(span trace.Span, status int) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, strconv.Itoa(status))
	}
	span.End()
}

// routePath is a ServeMux pattern without its method: "/v1/topics/{topic}/messages".
func routePath(route string) string {
	for i := 0; i < len(route); i++ {
		if route[i] == ' ' {
			return route[i+1:]
		}
	}
	return route
}
