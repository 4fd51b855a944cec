package rawio

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// pair is a connection through Dial (client) and the plain connection
// accepted for it (server), over TCP or a Unix socket.
func pair(t *testing.T, network string) (client, server net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	client, err = Dial(&net.Dialer{Timeout: 5 * time.Second})(context.Background(), network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.FailNow()
	}
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	if _, ok := client.(*conn); !ok {
		t.Fatalf("Dial over %s returned a %T, not rawio's connection", network, client)
	}
	// go-redis checks a pooled connection through its syscall.Conn before
	// reusing it; the wrapper must not hide it.
	if _, ok := client.(syscall.Conn); !ok {
		t.Fatalf("rawio's connection over %s hides SyscallConn", network)
	}
	return client, server
}

func random(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// Both ways at once, each far larger than the socket buffers: writes meet
// a full buffer (EAGAIN) and must wait and go on where they stopped.
func TestEveryByteArrivesBothWaysInOrder(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			client, server := pair(t, network)
			up, down := random(t, 8<<20), random(t, 8<<20)
			errs := make(chan error, 3)
			var gotUp []byte
			go func() {
				var err error
				gotUp, err = io.ReadAll(io.LimitReader(server, int64(len(up))))
				errs <- err
			}()
			go func() {
				_, err := server.Write(down)
				errs <- err
			}()
			go func() {
				n, err := client.Write(up)
				if err == nil && n != len(up) {
					err = errors.New("short write without an error")
				}
				errs <- err
			}()
			gotDown := make([]byte, len(down))
			if _, err := io.ReadFull(client, gotDown); err != nil {
				t.Fatalf("read through rawio: %v", err)
			}
			for range 3 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(gotUp, up) {
				t.Error("the bytes written through rawio arrived changed")
			}
			if !bytes.Equal(gotDown, down) {
				t.Error("the bytes read through rawio are not the ones sent")
			}
		})
	}
}

func TestPeerClosingIsEOF(t *testing.T) {
	client, server := pair(t, "tcp")
	server.Write([]byte("last"))
	server.Close()
	client.SetReadDeadline(time.Now().Add(5 * time.Second)) // a missed EOF fails, not hangs
	got, err := io.ReadAll(client)
	if err != nil || string(got) != "last" {
		t.Fatalf("ReadAll = %q, %v; want \"last\" and io.EOF (nil)", got, err)
	}
	if n, err := client.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("Read after the end = %d, %v; want 0, io.EOF", n, err)
	}
}

func TestDeadlinesEndReadsAndWritesAsTimeouts(t *testing.T) {
	client, _ := pair(t, "tcp")
	client.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := client.Read(make([]byte, 8))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Read past its deadline: %v, want a timeout", err)
	}

	// The server never reads: the write fills the socket buffers and waits
	// until its deadline.
	client.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	big := make([]byte, 64<<20)
	n, err := client.Write(big)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write past its deadline: %d bytes, %v; want a timeout", n, err)
	}
	if n <= 0 || n >= len(big) {
		t.Errorf("Write reported %d of %d bytes written; want what the buffers took", n, len(big))
	}
}

func TestCloseEndsABlockedRead(t *testing.T) {
	client, _ := pair(t, "tcp")
	done := make(chan error, 1)
	go func() {
		_, err := client.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	client.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Read after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still blocked 5 s after Close")
	}
}

// A failed system call comes back as the error the net package gives:
// a *net.OpError around the errno.
func TestWritingToAResetConnectionFailsWithTheErrno(t *testing.T) {
	client, server := pair(t, "tcp")
	server.(*net.TCPConn).SetLinger(0) // close with a reset
	server.Close()
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for err == nil && time.Now().Before(deadline) {
		_, err = client.Write([]byte("x"))
		time.Sleep(time.Millisecond)
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "write" {
		t.Fatalf("write to a reset connection: %v, want a *net.OpError of write", err)
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		t.Errorf("write to a reset connection: %v, want ECONNRESET or EPIPE", err)
	}
}

func TestOtherConnectionsAreLeftAsTheyAre(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := Conn(a); got != a {
		t.Errorf("Conn(net.Pipe()) = %T, want the pipe itself", got)
	}
	tc := tls.Client(a, &tls.Config{InsecureSkipVerify: true})
	if got := Conn(tc); got != net.Conn(tc) {
		t.Errorf("Conn(*tls.Conn) = %T, want it unchanged", got)
	}
}
