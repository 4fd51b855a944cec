package cli

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/console"
)

// TestListenerHoldsAtMostMaxConns: with DELAYBRIDGE_HTTP_MAX_CONNS
// connections held open (idle), one more is not served, and the process
// holds no more than the cap; once one of them closes, it is served, and
// the listener serves as before. Before, every connection was taken (8,000
// idle ones added 158 MB).
func TestListenerHoldsAtMostMaxConns(t *testing.T) {
	const maxConns = 8
	logs := &syncBuffer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	stop, err := startHTTPWith("127.0.0.1:0", maxConns, mux, slog.New(slog.NewTextHandler(logs, nil)), console.DefaultTimeouts)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	m := regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no address in %s", logs.String())
	}
	addr := m[1]
	healthz := func(c net.Conn, wait time.Duration) error {
		_ = c.SetDeadline(time.Now().Add(wait))
		if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	var held []net.Conn
	for i := range maxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := healthz(c, 10*time.Second); err != nil { // served, and now idle
			t.Fatalf("connection %d of %d: %v", i+1, maxConns, err)
		}
		held = append(held, c)
	}
	extra, err := net.Dial("tcp", addr) // the kernel's backlog takes it
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if err := healthz(extra, time.Second); err == nil {
		t.Fatalf("connection %d of %d was served", maxConns+1, maxConns)
	}
	_ = held[0].Close()
	_ = extra.Close() // its request timed out on this side; try afresh
	again, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	deadline := time.Now().Add(10 * time.Second)
	for err := healthz(again, 3*time.Second); err != nil; err = healthz(again, 3*time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("with a place freed, a new connection is still not served: %v", err)
		}
		_ = again.Close()
		if again, err = net.Dial("tcp", addr); err != nil {
			t.Fatal(err)
		}
	}
}
