package console_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/console"
	"github.com/delaybridge/delaybridge/internal/testing/conntest"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestIdleAndSlowConnectionsAreClosed: the console closes an idle
// keep-alive connection and one whose POST body trickles in, within its
// timeouts (short ones here). Before, it had only a header timeout: an idle
// keep-alive was still open after 150 s, and so was a slow body.
func TestIdleAndSlowConnectionsAreClosed(t *testing.T) {
	rdb := redistest.Connect(t)
	srv, err := console.New(console.Options{Queue: queue.New(rdb), Prefix: redistest.Prefix(t, rdb), Token: "console-token-0123456789",
		Timeouts: console.Timeouts{ReadHeader: 300 * time.Millisecond, Read: 500 * time.Millisecond,
			Write: 500 * time.Millisecond, Idle: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	conntest.WantIdleClosed(t, ln.Addr().String(), "localhost", "/healthz", 5*time.Second)
	conntest.WantSlowBodyClosed(t, ln.Addr().String(), "localhost", "/login", 5*time.Second)
}
