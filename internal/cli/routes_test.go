package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

// TestHTTPServesOnlyMetricsAndProbes: the listener is reachable by whatever
// scrapes the pod, so it answers /metrics, /healthz and /readyz to GET and
// nothing else (no pprof, no expvar, no index, no writes).
func TestHTTPServesOnlyMetricsAndProbes(t *testing.T) {
	rdb := redistest.Connect(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "delaybridge_routes_test_total", Help: "a metric to find"}))
	srv := httptest.NewServer(routes(reg, rdb, nil, nil, nil, nil, nil))
	defer srv.Close()

	for _, tc := range []struct {
		method, path string
		want         int
		body         string
	}{
		{"GET", "/metrics", http.StatusOK, "delaybridge_routes_test_total 0"},
		{"GET", "/healthz", http.StatusOK, "ok"},
		{"GET", "/readyz", http.StatusOK, "ready"},
		{"HEAD", "/healthz", http.StatusOK, ""},
		{"GET", "/", http.StatusNotFound, ""},
		{"GET", "/debug/pprof/", http.StatusNotFound, ""},
		{"GET", "/debug/pprof/profile", http.StatusNotFound, ""},
		{"GET", "/debug/vars", http.StatusNotFound, ""},
		{"GET", "/metrics/../debug/pprof/", http.StatusNotFound, ""},
		{"POST", "/metrics", http.StatusMethodNotAllowed, ""},
		{"PUT", "/healthz", http.StatusMethodNotAllowed, ""},
		{"DELETE", "/readyz", http.StatusMethodNotAllowed, ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.want {
				t.Fatalf("status %d, want %d (body %q)", res.StatusCode, tc.want, body)
			}
			if !strings.Contains(string(body), tc.body) {
				t.Errorf("body %q does not contain %q", body, tc.body)
			}
		})
	}
}
