package tracing

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestTracingIsOffUnlessAnEndpointOrOTLPExporterIsSet(t *testing.T) {
	for _, tc := range []struct {
		vars map[string]string
		on   bool
	}{
		{nil, false},
		{map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		if got := Enabled(env(tc.vars)); got != tc.on {
			t.Errorf("Enabled(%v) = %v, want %v", tc.vars, got, tc.on)
		}
	}
	tr, err := Setup(context.Background(), env(nil), "test", slog.New(slog.DiscardHandler))
	if err != nil || tr.Provider != nil || tr.Shutdown(context.Background()) != nil {
		t.Errorf("Setup without variables: %+v, %v; want no provider", tr, err)
	}
}

func TestBadVariablesAreReportedByName(t *testing.T) {
	err := Check(env(map[string]string{
		"OTEL_TRACES_EXPORTER":        "zipkin",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_TRACES_SAMPLER":         "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG":     "2",
	}))
	for _, name := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_TRACES_SAMPLER_ARG"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Check error %v does not name %s", err, name)
		}
	}
	if err := Check(env(map[string]string{"OTEL_TRACES_SAMPLER": "sometimes"})); err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_SAMPLER") {
		t.Errorf("unknown sampler: %v", err)
	}
	tr, err := Setup(context.Background(), env(map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}), "test", slog.New(slog.DiscardHandler))
	if err != nil || tr.Provider == nil {
		t.Fatalf("Setup with OTEL_TRACES_EXPORTER=otlp: %v", err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Errorf("shutdown with nothing to flush: %v", err)
	}
}
