package api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

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
	ctx, span := s.opts.Tracer.Start(ctx, r.Method+" "+routePath(route), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", routePath(route)),
			attribute.String("url.path", r.URL.Path)))
	if t := topicOf(route, r.URL.Path); t != "" {
		span.SetAttributes(attribute.String("delaybridge.topic", t))
	}
	return r.WithContext(ctx), span
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

// topicOf is the {topic} of a request's path (the mux has not matched it
// yet: PathValue is empty here).
func topicOf(route, path string) string {
	if !strings.Contains(route, "{topic}") {
		return ""
	}
	parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 4)
	if len(parts) < 3 || parts[0] != "v1" || parts[1] != "topics" {
		return ""
	}
	if t, err := url.PathUnescape(parts[2]); err == nil {
		return t
	}
	return parts[2]
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
