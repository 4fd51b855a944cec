package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/tracing"
)

// TestAPoisonedRequestNeverCostsAnotherRequestItsSpan: unauthenticated
// requests to /v1/topics/%C0%AF/messages (invalid UTF-8 once unescaped) and
// to a 60 KB path end their spans in the same export batch as an
// authorised schedule; the real collector (Jaeger) keeps the schedule's
// span, whose attributes are the route's template, never the path.
func TestAPoisonedRequestNeverCostsAnotherRequestItsSpan(t *testing.T) {
	jaeger := e2etest.StartJaeger(t)
	vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.OTLP, "OTEL_SERVICE_NAME": "api-poison",
		"OTEL_BSP_SCHEDULE_DELAY": "3600000"}
	for k, v := range vars { // the OTLP client reads the process's environment
		t.Setenv(k, v)
	}
	tr, err := tracing.Setup(context.Background(), func(k string) string { return vars[k] }, "test", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	f := newFixture(t)
	srv, err := New(Options{Queue: f.q, Prefix: f.prefix, Tokens: []Token{{Secret: fullToken}}, Tracer: tr.Provider.Tracer("api")})
	if err != nil {
		t.Fatal(err)
	}
	const poisonTrace = "1af7651916cd43dd8448eb211c80319c"
	for _, path := range []string{"/v1/topics/%C0%AF/messages", "/v1/topics/" + strings.Repeat("a", 60<<10) + "/messages"} {
		req := httptest.NewRequest("POST", path, strings.NewReader(`{"body":"x"}`))
		req.Header.Set("traceparent", "00-"+poisonTrace+"-b7ad6b7169203331-01")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("POST %.40s…: %d, want 401", path, w.Code)
		}
	}
	f.scheduleTraced(srv, "legit")
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var spans []e2etest.JaegerSpan
	deadline := time.Now().Add(20 * time.Second)
	for len(spans) == 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		spans = jaeger.Trace(t, testTraceID)
	}
	if len(spans) != 1 || spans[0].OperationName != "POST /v1/topics/{topic}/messages" || spans[0].Tag("delaybridge.topic") != "orders" {
		t.Fatalf("the schedule's trace in Jaeger: %+v; want its span, which the poisoned requests' batch must not cost it", spans)
	}
	for _, s := range jaeger.Trace(t, poisonTrace) {
		if s.Tag("url.path") != nil || s.Tag("delaybridge.topic") != nil || s.OperationName != "POST /v1/topics/{topic}/messages" {
			t.Errorf("an unauthenticated request's span %.60q carries what its caller chose (url.path %v, delaybridge.topic %v)",
				s.OperationName, s.Tag("url.path") != nil, s.Tag("delaybridge.topic") != nil)
		}
	}
}
