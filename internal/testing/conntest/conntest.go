// Package conntest checks, over a real TCP connection, that a server closes
// connections a client holds open: idle keep-alives and slow requests.
package conntest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// WantIdleClosed sends one full request (GET path with Host host) on a new
// connection to addr, reads the answer, then waits: the server must close the
// idle keep-alive connection within within.
func WantIdleClosed(t *testing.T, addr, host, path string, within time.Duration) {
	t.Helper()
	c := dial(t, addr)
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
		t.Fatalf("write request: %v", err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	wantClosed(t, c, br, within, "an idle keep-alive connection")
}

// WantSlowBodyClosed sends the header of a POST to path announcing a body
// of 1,000 bytes and only 10 of them: the server must close the connection
// (answering or not) within within.
func WantSlowBodyClosed(t *testing.T, addr, host, path string, within time.Duration) {
	t.Helper()
	c := dial(t, addr)
	req := "POST " + path + " HTTP/1.1\r\nHost: " + host +
		"\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\ntoken=abcd"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatalf("write request: %v", err)
	}
	wantClosed(t, c, bufio.NewReader(c), within, "a connection sending its body slowly")
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// wantClosed reads until the server closes c (an answer may come first).
func wantClosed(t *testing.T, c net.Conn, br *bufio.Reader, within time.Duration, what string) {
	t.Helper()
	began := time.Now()
	_ = c.SetReadDeadline(began.Add(within))
	_, err := io.Copy(io.Discard, br)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("%s still open after %s", what, within)
	}
	t.Logf("%s closed after %s", what, time.Since(began).Round(time.Millisecond))
}
