package cli

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// daemon is `delaybridge run` started by a test through dispatch, with the
// test's DELAYBRIDGE_* variables and its HTTP server on a free port.
type daemon struct {
	t      *testing.T
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan int
	addr   string
}

var listening = regexp.MustCompile(`"msg":"http listening","addr":"([^"]+)"`)

func startDaemon(t *testing.T) *daemon {
	t.Helper()
	t.Setenv("DELAYBRIDGE_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("DELAYBRIDGE_LOG_FORMAT", "json")
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemon{t: t, logs: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		d.done <- dispatch(ctx, []string{"run"}, stdio{in: strings.NewReader(""), out: io.Discard, err: d.logs})
	}()
	t.Cleanup(func() { d.stop(30 * time.Second) })
	deadline := time.Now().Add(15 * time.Second)
	for d.addr == "" {
		if m := listening.FindStringSubmatch(d.logs.String()); m != nil {
			d.addr = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon does not listen; logs:\n%s", d.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return d
}

// stop cancels the daemon (SIGTERM) and returns its exit code, or -1 when it
// did not exit within limit.
func (d *daemon) stop(limit time.Duration) int {
	d.cancel()
	select {
	case code := <-d.done:
		d.done <- code // a second stop (cleanup) sees it too
		return code
	case <-time.After(limit):
		return -1
	}
}

// readyz is /readyz's status and body.
func (d *daemon) readyz() (int, string) {
	d.t.Helper()
	res, err := http.Get("http://" + d.addr + "/readyz")
	if err != nil {
		d.t.Fatalf("GET /readyz: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// waitReadyz polls /readyz until cond holds for its answer.
func (d *daemon) waitReadyz(within time.Duration, what string, cond func(code int, body string) bool) {
	d.t.Helper()
	deadline := time.Now().Add(within)
	for {
		code, body := d.readyz()
		if cond(code, body) {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("/readyz: %d %q, want %s; logs:\n%s", code, body, what, d.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
