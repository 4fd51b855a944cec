package cli

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/forwarder"
	"github.com/delaybridge/delaybridge/internal/tracing"
)

// tracerName names the daemon's spans' instrumentation scope.
const tracerName = "github.com/delaybridge/delaybridge"

// setupTracing builds the daemon's tracer provider from the OTEL_*
// variables (internal/tracing) and sets the W3C propagator, so the front
// doors store the trace context they are given whether or not the daemon
// exports spans. A bad variable is a configuration error (exit 2).
func setupTracing(ctx context.Context, s stdio, log *slog.Logger) (tracing.Tracing, int) {
	otel.SetTextMapPropagator(tracing.Propagator)
	tr, err := tracing.Setup(ctx, os.Getenv, s.build.info().Version, log)
	if err != nil {
		fmt.Fprintf(s.err, "delaybridge: bad configuration:\n  %v\n", err)
		return tr, exitConfig
	}
	if tr.Provider != nil {
		log.Info("tracing on: spans exported over OTLP", "endpoint",
			cmp.Or(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "default"))
	}
	return tr, exitOK
}

// shutdownTracing flushes the spans not exported yet, for at most 5 s.
func shutdownTracing(tr tracing.Tracing, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		log.Warn("tracing: spans not flushed", "err", err)
	}
}

// tracer is the daemon's tracer (build b's instrumentation), nil when
// tracing is off.
func tracer(tp trace.TracerProvider, b Build) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(tracerName, trace.WithInstrumentationVersion(b.info().Version))
}

// forwarderTracing is the forwarder's tracing with t (nil: tracing is off):
// where each topic publishes.
func forwarderTracing(cfg config.Config, t trace.Tracer) forwarder.Tracing {
	if t == nil {
		return forwarder.Tracing{}
	}
	dests := make(map[string]forwarder.Destination, len(cfg.Topics))
	for _, tc := range cfg.Topics {
		switch tc.Sink {
		case "kafka":
			dests[tc.Name] = forwarder.Destination{System: "kafka", Name: cmp.Or(tc.KafkaTopic, tc.Name)}
		case "redis":
			dests[tc.Name] = forwarder.Destination{System: "redis", Name: tc.Stream}
		default:
			dests[tc.Name] = forwarder.Destination{System: "rabbitmq", Name: tc.Exchange}
		}
	}
	return forwarder.Tracing{Tracer: t, Destinations: dests}
}

// envTraceContext is ctx with the trace context of the TRACEPARENT and
// TRACESTATE variables (the OpenTelemetry convention for processes), so a
// traced script's `delaybridge schedule` or `recur set` stores it.
func envTraceContext(ctx context.Context) context.Context {
	otel.SetTextMapPropagator(tracing.Propagator)
	env := propagation.MapCarrier{}
	if v := os.Getenv("TRACEPARENT"); v != "" {
		env["traceparent"] = v
		env["tracestate"] = os.Getenv("TRACESTATE")
	}
	return propagation.TraceContext{}.Extract(ctx, env)
}
