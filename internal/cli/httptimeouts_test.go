package cli

import (
	"log/slog"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/console"
	"github.com/delaybridge/delaybridge/internal/testing/conntest"
)

// TestMetricsListenerClosesIdleAndSlowConnections: the listener of
// /metrics, /healthz and /readyz closes an idle keep-alive connection and a
// slow request within its timeouts (short ones here); before, it had only a
// header timeout.
func TestMetricsListenerClosesIdleAndSlowConnections(t *testing.T) {
	logs := &syncBuffer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	stop, err := startHTTPWith("127.0.0.1:0", 1024, mux, slog.New(slog.NewTextHandler(logs, nil)),
		console.Timeouts{ReadHeader: 300 * time.Millisecond, Read: 500 * time.Millisecond,
			Write: 500 * time.Millisecond, Idle: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	m := regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no address in %s", logs.String())
	}
	conntest.WantIdleClosed(t, m[1], "localhost", "/healthz", 5*time.Second)
	conntest.WantSlowBodyClosed(t, m[1], "localhost", "/healthz", 5*time.Second)
}
