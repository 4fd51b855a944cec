package e2etest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Jaeger is a Jaeger v2 all-in-one (in-memory storage) started for one
// test: OTLP over HTTP in, the HTTP query API out, both on free loopback
// ports.
type Jaeger struct {
	// OTLP is the OTLP/HTTP endpoint, http://127.0.0.1:port (the value of
	// OTEL_EXPORTER_OTLP_ENDPOINT).
	OTLP string
	// Query is the base URL of the query API (/api/traces...).
	Query string
}

// jaegerConfig is the all-in-one's configuration (cmd/jaeger/internal/
// all-in-one.yaml of Jaeger) cut to what the test needs, every listener on
// a port of the test's choosing: memory storage, OTLP/HTTP in, query out.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

// StartJaeger builds Jaeger once (scripts/jaeger.sh caches the binary) and
// starts it until the test ends. It fails the test, never skips it, when
// Jaeger cannot be built or started.
func StartJaeger(tb testing.TB) *Jaeger {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts", "jaeger.sh")
	var out, errOut bytes.Buffer
	build := exec.Command(script)
	build.Stdout, build.Stderr = &out, &errOut
	if err := build.Run(); err != nil {
		tb.Fatalf("build Jaeger with scripts/jaeger.sh: %v\n%s", err, errOut.String())
	}
	bin := strings.TrimSpace(out.String())
	ports := freePorts(tb, 3)
	cfg := filepath.Join(tb.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, jaegerConfig, ports[0], ports[1], ports[2]), 0o600); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config", cfg)
	var logs syncWriter
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		cancel()
		tb.Fatalf("start Jaeger %s: %v", bin, err)
	}
	tb.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	j := &Jaeger{OTLP: fmt.Sprintf("http://127.0.0.1:%d", ports[2]), Query: fmt.Sprintf("http://127.0.0.1:%d", ports[0])}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(j.Query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j
			}
		}
		if time.Now().After(deadline) || cmd.ProcessState != nil {
			tb.Fatalf("Jaeger's query API did not answer within 30 s (%v); its log:\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// JaegerSpan is a span as the query API returns it.
type JaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
}

// Tag is the value of the span's tag key, nil when it has none.
func (s JaegerSpan) Tag(key string) any {
	for _, t := range s.Tags {
		if t.Key == key {
			return t.Value
		}
	}
	return nil
}

// Trace returns the spans of one trace (none when Jaeger has not got it).
func (j *Jaeger) Trace(tb testing.TB, traceID string) []JaegerSpan {
	tb.Helper()
	resp, err := http.Get(j.Query + "/api/traces/" + traceID)
	if err != nil {
		tb.Fatalf("query Jaeger: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var body struct {
		Data []struct {
			Spans []JaegerSpan `json:"spans"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		tb.Fatalf("query Jaeger trace %s: %d: %v", traceID, resp.StatusCode, err)
	}
	var out []JaegerSpan
	for _, d := range body.Data {
		out = append(out, d.Spans...)
	}
	return out
}

// freePorts returns n ports free on 127.0.0.1 now.
func freePorts(tb testing.TB, n int) []int {
	tb.Helper()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	out := make([]int, n)
	for i := range out {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		lns = append(lns, ln)
		out[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return out
}

// syncWriter collects a process's output for a failure message.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
