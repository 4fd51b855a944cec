package cli

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// TestAPIWithoutTokenExits2NamingTheVariable: neither `delaybridge api` nor
// `delaybridge run` with DELAYBRIDGE_API_ADDR serves an API nobody locked.
func TestAPIWithoutTokenExits2NamingTheVariable(t *testing.T) {
	e := newCLIEnv(t)
	t.Setenv("DELAYBRIDGE_HTTP_ADDR", "127.0.0.1:0")
	if code, _, errs := e.run("", "api"); code != exitConfig || !strings.Contains(errs, "DELAYBRIDGE_API_TOKENS") {
		t.Errorf("api: exit %d, stderr %q; want 2 naming DELAYBRIDGE_API_TOKENS", code, errs)
	}
	t.Setenv("DELAYBRIDGE_API_ADDR", "127.0.0.1:0")
	for _, cmd := range []string{"api", "run"} {
		if code, _, errs := e.run("", cmd); code != exitConfig || !strings.Contains(errs, "DELAYBRIDGE_API_TOKENS") {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming DELAYBRIDGE_API_TOKENS", cmd, code, errs)
		}
	}
}

// TestAPICommandServesUntilCancelled runs `delaybridge api` on free ports
// and schedules through it.
func TestAPICommandServesUntilCancelled(t *testing.T) {
	e := newCLIEnv(t)
	const token = "cmd-api-token-0123456789"
	t.Setenv("DELAYBRIDGE_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("DELAYBRIDGE_API_ADDR", "127.0.0.1:0")
	t.Setenv("DELAYBRIDGE_API_TOKENS", token)
	t.Setenv("DELAYBRIDGE_LOG_FORMAT", "json")
	l := queue.LayoutOf(e.orders)
	l.Sink = "amqp"
	if _, err := e.q.Register(e.ctx, e.orders.Prefix, "test", []queue.Layout{l}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"api"}, stdio{in: strings.NewReader(""), out: io.Discard, err: logs})
	}()
	var addr string
	deadline := time.Now().Add(30 * time.Second)
	for addr == "" && time.Now().Before(deadline) {
		if _, after, ok := strings.Cut(logs.String(), `"msg":"api listening","addr":"`); ok {
			addr, _, _ = strings.Cut(after, `"`)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if addr == "" {
		cancel()
		t.Fatalf("no api listening in the log:\n%s", logs.String())
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/topics/orders/messages", strings.NewReader(`{"id":"a","body":"x","delay":"1h"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("POST: %d", resp.StatusCode)
	}
	http.DefaultClient.CloseIdleConnections()
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("api did not stop")
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("the log holds the token")
	}
}
