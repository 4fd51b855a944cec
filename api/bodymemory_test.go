package api

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdBody opens a connection that sends a schedule request declaring a
// body of n bytes and then sends none of it, so the server holds the
// request's share of it until the connection closes.
func (f *fixture) holdBody(n int) net.Conn {
	f.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(f.base, "http://"))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = c.Close() })
	fmt.Fprintf(c, "POST /v1/topics/orders/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{", fullToken, n)
	return c
}

// TestRequestsBeyondTheMemoryBudgetAre503WithoutReadingThem: while two
// requests whose bodies take the whole memory for request bodies are being
// read, more requests are answered 503 busy with Retry-After (after a short
// wait) without their bodies being read, so the process allocates far less
// than their bodies; once the memory is given back, a request is served.
// A body declared over the request size limit is 413 at once.
func TestRequestsBeyondTheMemoryBudgetAre503WithoutReadingThem(t *testing.T) {
	const mib = 1 << 20
	f, srv := newHugeFixture(t, func(o *Options) { o.MaxRequestMemory = 20 * mib })
	held := []net.Conn{f.holdBody(10 * mib), f.holdBody(10 * mib)}
	for wait := time.Now().Add(10 * time.Second); srv.bodies.inUse() < 20*mib; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(wait) {
			t.Fatalf("the held requests took %d bytes of the body memory, want 20 MiB", srv.bodies.inUse())
		}
	}

	body := []byte(`{"delay":"1h","body":"` + strings.Repeat("x", 10*mib-40) + `"}`)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{ExpectContinueTimeout: 20 * time.Second}}
	t.Cleanup(client.CloseIdleConnections)
	post := func() (*http.Response, error) {
		req, err := http.NewRequest("POST", f.base+"/v1/topics/orders/messages", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+fullToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Expect", "100-continue")
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return resp, err
	}
	const many = 8
	statuses := make([]string, many)
	total, _ := allocated(func() {
		var wg sync.WaitGroup
		for i := range many {
			wg.Go(func() {
				resp, err := post()
				if err != nil {
					statuses[i] = err.Error()
					return
				}
				statuses[i] = fmt.Sprintf("%d retry-after=%s", resp.StatusCode, resp.Header.Get("Retry-After"))
			})
		}
		wg.Wait()
	})
	for i, s := range statuses {
		if s != "503 retry-after=1" {
			t.Errorf("request %d beyond the body memory: %s; want 503 with Retry-After 1", i, s)
		}
	}
	t.Logf("%d requests of %d MiB beyond the body memory allocated %d MiB in all", many, len(body)/mib, total/mib)
	if total > 16*mib {
		t.Errorf("%d requests refused for want of body memory allocated %d MiB; want their bodies unread (under 16 MiB)", many, total/mib)
	}

	for _, c := range held {
		_ = c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := post()
		if err == nil && resp.StatusCode == http.StatusCreated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the body memory was given back: %v %v; want 201", resp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	over := f.do("POST", "/v1/topics/orders/messages", fullToken, `{"body":"`+strings.Repeat("y", DefaultMaxRequest)+`"}`)
	f.want(over, http.StatusRequestEntityTooLarge, "request_too_large")
	runtime.KeepAlive(held)
}
