// Package tracing sets up the daemon's OpenTelemetry tracer provider from
// the standard OTEL_* environment variables: an OTLP exporter (HTTP/protobuf)
// behind a batch span processor (OTEL_BSP_*), the sampler of OTEL_TRACES_SAMPLER
// (default parentbased_always_on, so a producer's sampled flag decides) and
// the resource of OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES (service name
// "delaybridge" when unset).
//
// Tracing is off unless an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set or OTEL_TRACES_EXPORTER is
// "otlp"; OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true turn it off
// whatever else is set. Off, Setup returns no provider: the daemon then
// starts no span at all, so the hot path pays nothing.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Propagator is the propagator of the daemon and of what it stores: W3C
// trace context and baggage.
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(
	propagation.TraceContext{}, propagation.Baggage{})

// Tracing is the daemon's tracer provider, or none.
type Tracing struct {
	// Provider is nil when tracing is off.
	Provider trace.TracerProvider
	sdk      *sdktrace.TracerProvider
}

// Shutdown flushes the spans not exported yet and stops the exporter
// (nothing when tracing is off).
func (t Tracing) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	if err := t.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("shut down tracing: %w", err)
	}
	return nil
}

// ForceFlush exports the spans ended so far (nothing when tracing is off).
func (t Tracing) ForceFlush(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	if err := t.sdk.ForceFlush(ctx); err != nil {
		return fmt.Errorf("flush spans: %w", err)
	}
	return nil
}

// Enabled reports whether the variables getenv reads turn tracing on.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Check validates the variables the SDK would otherwise only log about:
// every problem, each naming its variable.
func Check(getenv func(string) string) error {
	var errs []error
	if v := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); v != "" && v != "otlp" && v != "none" {
		errs = append(errs, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: only otlp and none are supported", v))
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if v := strings.TrimSpace(getenv(name)); v != "" && v != "http/protobuf" {
			errs = append(errs, fmt.Errorf("%s=%q: only http/protobuf is supported", name, v))
		}
	}
	sampler := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	switch sampler {
	case "", "always_on", "always_off", "parentbased_always_on", "parentbased_always_off":
	case "traceidratio", "parentbased_traceidratio":
		if arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG")); arg != "" {
			if r, err := strconv.ParseFloat(arg, 64); err != nil || r < 0 || r > 1 {
				errs = append(errs, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1", arg))
			}
		}
	default:
		errs = append(errs, fmt.Errorf("OTEL_TRACES_SAMPLER=%q: want always_on, always_off, traceidratio or their parentbased_ forms", sampler))
	}
	if _, err := readBatchConfig(getenv); err != nil {
		errs = append(errs, err)
	}
	if _, err := readValueLimit(getenv); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Setup builds the tracer provider the variables ask for (see the package
// comment); the exporter reads its own variables (endpoint, headers,
// timeout, compression). version is the service.version attribute; log
// gets the spans that could not be exported or were dropped.
func Setup(ctx context.Context, getenv func(string) string, version string, log *slog.Logger) (Tracing, error) {
	if err := Check(getenv); err != nil {
		return Tracing{}, err
	}
	if !Enabled(getenv) {
		return Tracing{}, nil
	}
	batch, _ := readBatchConfig(getenv) // checked above
	limit, _ := readValueLimit(getenv)
	exp, err := newExporter(ctx, otlptracehttp.NewClient(), limit)
	if err != nil {
		return Tracing{}, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "delaybridge"),
			attribute.String("service.version", version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv())
	if err != nil {
		return Tracing{}, fmt.Errorf("trace resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	// The sampler comes from OTEL_TRACES_SAMPLER (checked above); unset,
	// the SDK's ParentBased(AlwaysSample). The batcher drops spans when its
	// queue is full: span volume is bounded there and by the sampler, never
	// by holding a message.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(newBatcher(exp, batch, func(err error) {
		log.Warn("tracing: spans lost", "err", err)
	})), sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(spanLimits(limit)))
	return Tracing{Provider: tp, sdk: tp}, nil
}
