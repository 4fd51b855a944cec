package cli

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/delaybridge/delaybridge/queue"
)

// A traced script's `delaybridge schedule` stores the TRACEPARENT it runs
// under, so the message's trace starts at the script's span.
func TestScheduleCommandStoresTheTraceparentOfItsEnvironment(t *testing.T) {
	e := newCLIEnv(t)
	t.Cleanup(func() { otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator()) })
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	t.Setenv("TRACEPARENT", tp)
	t.Setenv("TRACESTATE", "a=b")
	e.mustRun("", "schedule", "orders", "--in", "30m", "--id", "traced", "x")
	info, err := e.q.Get(e.ctx, e.orders, "traced")
	if err != nil {
		t.Fatal(err)
	}
	if h := info.Message.Headers; h[queue.HeaderTraceParent] != tp || h[queue.HeaderTraceState] != "a=b" {
		t.Errorf("stored headers %v, want the environment's trace context", h)
	}
}

func TestTracingVariablesThatCannotWorkExitTwo(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"OTEL_TRACES_EXPORTER", "zipkin"},
		{"OTEL_BSP_MAX_QUEUE_SIZE", "-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv(tc.name, tc.value)
			t.Cleanup(func() { otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator()) })
			var errOut strings.Builder
			s := stdio{in: strings.NewReader(""), out: io.Discard, err: &errOut}
			if _, code := setupTracing(t.Context(), s, slog.New(slog.DiscardHandler)); code != exitConfig {
				t.Errorf("exit %d, want %d", code, exitConfig)
			}
			if got := errOut.String(); !strings.Contains(got, tc.name) {
				t.Errorf("stderr %q does not name %s", got, tc.name)
			}
		})
	}
}
