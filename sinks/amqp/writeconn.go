package amqp

import (
	"net"
	"sync"
	"time"
)

// writeTimeoutConn bounds every write. The library writes without a
// deadline while holding the channel's lock, so a write stuck on a stalled
// network would keep the channel, and its shutdown, blocked forever.
//
// It also corks: the library flushes every message on its own, one system
// call each, so while a batch is published the writes are gathered and sent
// together (every corkLimit bytes, and when the batch is done). Nothing
// waits for an answer to a write made while corked. A failed write closes
// the connection, so the library, and the sink's watcher, see it drop.
type writeTimeoutConn struct {
	net.Conn
	timeout time.Duration

	mu     sync.Mutex
	corked bool
	buf    []byte
	err    error // the write that failed: every later one fails too
}

// corkLimit is the most bytes held back while corked.
const corkLimit = 64 << 10

func (c *writeTimeoutConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if !c.corked {
		return c.write(p)
	}
	c.buf = append(c.buf, p...)
	if len(c.buf) >= corkLimit {
		if err := c.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// cork holds writes back until uncork.
func (c *writeTimeoutConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork sends what was held back and lets writes through again.
func (c *writeTimeoutConn) uncork() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	if c.err == nil {
		c.flush()
	}
}

// flush sends the held-back bytes; mu is held.
func (c *writeTimeoutConn) flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.write(c.buf)
	c.buf = c.buf[:0]
	if cap(c.buf) > 4*corkLimit {
		c.buf = nil
	}
	return err
}

// write sends p with the write deadline; mu is held. A failure closes the
// connection: bytes held back may be lost, so it cannot go on.
func (c *writeTimeoutConn) write(p []byte) (int, error) {
	err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
	n := 0
	if err == nil {
		n, err = c.Conn.Write(p)
	}
	if err != nil {
		c.err = err
		c.Conn.Close()
	}
	return n, err
}
