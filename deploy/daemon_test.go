package deploy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// runAndStop starts the daemon against the real Redis and RabbitMQ, waits
// for /healthz (and /readyz) to answer 200, then stops it with SIGTERM.
func runAndStop(t *testing.T, bin string) {
	t.Helper()
	redisURL := envOr("DELAYBRIDGE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
	amqpURL := envOr("DELAYBRIDGE_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatalf("DELAYBRIDGE_TEST_REDIS_URL=%s: %v", redisURL, err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis at %s: %v", redisURL, err)
	}
	if c, err := net.DialTimeout("tcp", hostOf(t, amqpURL), 5*time.Second); err != nil {
		t.Fatalf("RabbitMQ at %s: %v", amqpURL, err)
	} else {
		c.Close()
	}
	prefix := fmt.Sprintf("deploytest-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		keys, _ := rdb.Keys(ctx, prefix+":*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
	})

	addr := freeAddr(t)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DELAYBRIDGE_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"DELAYBRIDGE_TOPICS=x",
		"DELAYBRIDGE_HTTP_ADDR="+addr,
		"DELAYBRIDGE_KEY_PREFIX="+prefix,
		"DELAYBRIDGE_REDIS_URL="+redisURL,
		"DELAYBRIDGE_AMQP_URL="+amqpURL,
		"DELAYBRIDGE_SHUTDOWN_TIMEOUT=10s",
		// A built-in exchange: /readyz waits for a topic's destination,
		// and with the default exchange that is a queue named x.
		"DELAYBRIDGE_TOPIC_X_EXCHANGE=amq.direct",
	)
	var logs bytes.Buffer
	cmd := exec.Command(bin, "run")
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	})

	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	waitFor := func(path string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		var last string
		for time.Now().Before(deadline) {
			select {
			case err := <-exited:
				exited <- err
				t.Fatalf("the daemon exited (%v) before %s answered 200:\n%s", err, path, logs.String())
			default:
			}
			resp, err := client.Get("http://" + addr + path)
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return
				}
				last = fmt.Sprintf("%d %s", resp.StatusCode, body)
			} else {
				last = err.Error()
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("GET %s: no 200 within 30s (last: %s); logs:\n%s", path, last, logs.String())
	}
	waitFor("/healthz")
	waitFor("/readyz")
	// /metrics serves the backlog gauges once the replica has looked at its
	// slots; their label values must be the ones the dashboard and alerts use.
	var body []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatalf("GET /metrics: %v", err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte("\ndelaybridge_replicas ")) && bytes.Contains(body, []byte("\ndelaybridge_backlog_messages{")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /metrics: %d, no delaybridge_replicas and delaybridge_backlog_messages within 30s:\n%.3000s", resp.StatusCode, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	checkServedLabelValues(t, body, queriedLabelValues(t))
	// Counters exist at 0 from the start, so an alert on increase() sees
	// the first event (forwarder's TestFreshForwarderExportsEverySeriesAtZero).
	if !bytes.Contains(body, []byte("\ndelaybridge_dead_total{topic=\"x\"} 0\n")) {
		t.Errorf("/metrics of a fresh daemon has no delaybridge_dead_total{topic=\"x\"} 0:\n%.3000s", body)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after SIGTERM the daemon exited with %v, want 0; logs:\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the daemon did not exit within 30s of SIGTERM; logs:\n%s", logs.String())
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func hostOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		t.Fatalf("no host in %s (%v)", rawURL, err)
	}
	return u.Host
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
