package deploy

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// tracing.env reaches the daemon's and the API's containers; the schema
// refuses a variable that is not OpenTelemetry's.
func TestHelmTracingEnvReachesTheDaemonAndTheAPI(t *testing.T) {
	t.Parallel()
	vals := map[string]any{"tracing": map[string]any{"env": map[string]any{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}},
		"api": map[string]any{"enabled": true}, "secretKeys": map[string]any{"apiTokens": "api-tokens"},
		"secrets": map[string]any{"apiTokens": "t0ken-0123456789abcdef:orders"}}
	r, _ := renderChart(t, "tracing", vals, false)
	for name, d := range map[string]*appsv1.Deployment{
		"daemon": only[*appsv1.Deployment](t, daemonOnly(r)),
		"api":    only[*appsv1.Deployment](t, componentOnly(r, apiComponent, true)),
	} {
		if got := envSourceValue(d, "OTEL_EXPORTER_OTLP_ENDPOINT"); got != "http://collector:4318" {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT = %q", name, got)
		}
	}
	bad := map[string]any{"tracing": map[string]any{"env": map[string]any{"DELAYBRIDGE_X": "1"}}}
	if _, err := renderValues(loadChart(t), bad, false); err == nil {
		t.Errorf("the schema accepts tracing.env.DELAYBRIDGE_X")
	}
}
