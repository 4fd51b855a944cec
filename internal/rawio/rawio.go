// Package rawio reads and writes TCP and Unix connections with raw system
// calls.
//
// Go's runtime wakes its monitor thread (sysmon) on every ordinary system
// call made while the process was idle, and the woken thread then polls
// every 20 µs until the process is idle again. A daemon that wakes for every
// message, publishes it and reads its confirm thereby pays several extra
// context switches per message: about half of delaybridge's CPU in steady
// traffic (docs/performance.md). Non-blocking socket reads and writes never
// block in the kernel, so they can be made as raw system calls, which leave
// sysmon asleep; waiting for readiness still goes through the runtime's
// network poller, so deadlines, Close and the scheduler work as before.
package rawio

import (
	"context"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Conn returns c reading and writing with raw system calls when c is a TCP
// or Unix connection, and c itself otherwise.
func Conn(c net.Conn) net.Conn {
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return c
	}
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return c
	}
	return &conn{Conn: c, rc: rc}
}

type conn struct {
	net.Conn
	rc syscall.RawConn
}

// SyscallConn is the connection's own: clients that check a pooled
// connection before reuse (go-redis peeks at the socket) keep doing so.
func (c *conn) SyscallConn() (syscall.RawConn, error) {
	return c.rc, nil
}

// Read reads what the socket holds, waiting in the network poller while it
// holds nothing; 0 bytes read from a non-empty p is io.EOF.
func (c *conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting in the network poller while the socket's
// buffer is full.
func (c *conn) Write(p []byte) (int, error) {
	written := 0
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for written < len(p) {
			rest := p[written:]
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
			switch e {
			case 0:
				written += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return written, c.opError("write", err)
	case errno != 0:
		return written, c.opError("write", os.NewSyscallError("write", errno))
	}
	return written, nil
}

func (c *conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// Dial returns d.DialContext with Conn around what it connects.
func Dial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return Conn(c), nil
	}
}
