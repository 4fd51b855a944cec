package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/internal/logrepeat"
	"github.com/delaybridge/delaybridge/internal/testing/faultproxy"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

// TestLogsWriteDurationsAsText: "1.38s", not 1380000000.
func TestLogsWriteDurationsAsText(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(config.Config{LogLevel: "info", LogFormat: "json"}, stdio{err: &buf})
	log.Info("waited", "retry_in", 1380*time.Millisecond)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not JSON: %q", buf.String())
	}
	if line["retry_in"] != "1.38s" {
		t.Errorf("retry_in = %#v, want \"1.38s\"", line["retry_in"])
	}
}

// TestGoRedisLinesStayJSONAndFoldTheirRepeats: what go-redis logs goes
// through slog, a repeat of the same kind of line waits for the interval's
// count (a 10 s outage wrote 23 "failed to dial" lines), and a failure to
// dial is DEBUG: the daemon's outage line reports it, with the hint.
func TestGoRedisLinesStayJSONAndFoldTheirRepeats(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(config.Config{LogLevel: "info", LogFormat: "json"}, stdio{err: &buf})
	r := redisLogger{log: log, repeats: logrepeat.New(log, time.Hour)}
	for i := range 5 {
		r.Printf(context.Background(), "redis: sentinel: new master=%q addr=%q\n", "mymaster", fmt.Sprintf("10.0.0.%d:6379", i))
		r.Printf(context.Background(), "redis: connection pool: failed to dial after %d attempts: %v\n", 5, "connection refused")
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1 (the first sentinel line; its repeats wait, dial failures are DEBUG):\n%s", len(lines), buf.String())
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatalf("not JSON: %q", lines[0])
	}
	if line["msg"] != "go-redis: sentinel: new master=… addr=…" || line["level"] != "WARN" ||
		line["err"] != `redis: sentinel: new master="mymaster" addr="10.0.0.0:6379"` {
		t.Errorf("line %v", line)
	}
}

// TestDaemonStopsCleanlyWhileRedisIsUnreachable: told to stop while Redis
// cannot be reached, the daemon returns what it can and exits 0 within its
// shutdown timeout.
func TestDaemonStopsCleanlyWhileRedisIsUnreachable(t *testing.T) {
	opts := redistest.Options(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	proxy, err := faultproxy.New(ctx, opts.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	_, prefix := redistest.New(t)
	url := strings.Replace(redistest.URL(), opts.Addr, proxy.Addr(), 1)
	if url == redistest.URL() {
		t.Skipf("cannot point %s at the proxy", redistest.URL())
	}
	amqpTopicEnv(t, "")
	t.Setenv("DELAYBRIDGE_REDIS_URL", url)
	t.Setenv("DELAYBRIDGE_KEY_PREFIX", prefix)
	t.Setenv("DELAYBRIDGE_SHUTDOWN_TIMEOUT", "3s")
	d := startDaemon(t)
	time.Sleep(500 * time.Millisecond) // scanning, heartbeating
	proxy.Cut()
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	code := d.stop(3*time.Second + 5*time.Second)
	if code != exitOK {
		t.Fatalf("exit %d after %s, want 0 within the shutdown timeout; logs:\n%s", code, time.Since(start), d.logs.String())
	}
	t.Logf("stopped in %s", time.Since(start))
}
