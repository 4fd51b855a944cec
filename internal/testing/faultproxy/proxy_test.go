package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer echoes every connection until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func newProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := New(context.Background(), echoServer(t))
	if err != nil {
		t.Fatalf("new proxy: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), 10*time.Second)
	if err != nil {
		t.Fatalf("dial proxy: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg and reads it back within timeout.
func roundTrip(c net.Conn, msg []byte, timeout time.Duration) error {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := c.Write(msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if !bytes.Equal(got, msg) {
		return errors.New("echo differs")
	}
	return nil
}

func waitConns(t *testing.T, p *Proxy, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.Conns() != want {
		if time.Now().After(deadline) {
			t.Fatalf("Conns() = %d, want %d", p.Conns(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readErr reads until an error, which a closed connection returns at once.
func readErr(c net.Conn) error {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c)
	if err == nil {
		return io.EOF
	}
	return err
}

func TestProxyForwardsBothWays(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	c := dial(t, p)
	big := bytes.Repeat([]byte("0123456789"), 100_000)
	if err := roundTrip(c, big, 10*time.Second); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	waitConns(t, p, 1)
}

func TestProxyCutClosesConnectionsAndRefusesNewOnes(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	c := dial(t, p)
	if err := roundTrip(c, []byte("before"), 10*time.Second); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	p.Cut()
	if err := readErr(c); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("open connection not closed by Cut: %v", err)
	}
	waitConns(t, p, 0)

	refused := dial(t, p)
	if err := readErr(refused); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("new connection not closed while cut: %v", err)
	}

	p.Restore()
	again := dial(t, p)
	if err := roundTrip(again, []byte("after"), 10*time.Second); err != nil {
		t.Fatalf("round trip after Restore: %v", err)
	}
}

func TestProxyResetSendsRSTAndKeepsAccepting(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	c := dial(t, p)
	if err := roundTrip(c, []byte("before"), 10*time.Second); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	waitConns(t, p, 1)
	p.Reset()
	if err := readErr(c); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after Reset: %v, want ECONNRESET", err)
	}
	waitConns(t, p, 0)
	again := dial(t, p)
	if err := roundTrip(again, []byte("after"), 10*time.Second); err != nil {
		t.Fatalf("round trip after Reset: %v", err)
	}
}

func TestProxyStallForwardsNothingUntilRestore(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	c := dial(t, p)
	if err := roundTrip(c, []byte("before"), 10*time.Second); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	p.Stall()
	if err := roundTrip(c, []byte("stalled"), 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("round trip while stalled: %v, want a timeout", err)
	}
	fresh := dial(t, p)
	if err := roundTrip(fresh, []byte("fresh"), 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("new connection while stalled: %v, want a timeout", err)
	}
	waitConns(t, p, 2)

	p.Restore()
	// The stalled bytes arrive now, then new ones.
	for name, conn := range map[string]net.Conn{"stalled": c, "fresh": fresh} {
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		got := make([]byte, len(name))
		if _, err := io.ReadFull(conn, got); err != nil || string(got) != name {
			t.Fatalf("held bytes after Restore: %q, %v; want %q", got, err, name)
		}
		if err := roundTrip(conn, []byte("after"), 10*time.Second); err != nil {
			t.Fatalf("round trip after Restore: %v", err)
		}
	}
}

func TestProxySlowDelaysEveryChunk(t *testing.T) {
	t.Parallel()
	p := newProxy(t)
	c := dial(t, p)
	const delay = 200 * time.Millisecond
	p.Slow(delay)
	start := time.Now()
	if err := roundTrip(c, []byte("slow"), 20*time.Second); err != nil {
		t.Fatalf("round trip while slow: %v", err)
	}
	// One chunk each way: at least two delays.
	if took := time.Since(start); took < 2*delay {
		t.Fatalf("round trip took %v while slowed by %v per chunk", took, delay)
	}
	p.Restore()
	if err := roundTrip(c, []byte("fast"), 10*time.Second); err != nil {
		t.Fatalf("round trip after Restore: %v", err)
	}
}

func TestProxyCloseEndsConnections(t *testing.T) {
	t.Parallel()
	p, err := New(context.Background(), echoServer(t))
	if err != nil {
		t.Fatalf("new proxy: %v", err)
	}
	c := dial(t, p)
	p.Stall()
	if _, err := c.Write([]byte("held")); err != nil {
		t.Fatalf("write: %v", err)
	}
	waitConns(t, p, 1)
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := readErr(c); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection still open after Close: %v", err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatalf("proxy still accepts after Close")
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestProxyEndsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := New(ctx, echoServer(t))
	if err != nil {
		t.Fatalf("new proxy: %v", err)
	}
	c := dial(t, p)
	if err := roundTrip(c, []byte("x"), 10*time.Second); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	cancel()
	if err := readErr(c); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection open after context ended: %v", err)
	}
	_ = p.Close()
}
