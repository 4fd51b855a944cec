package cli

import (
	"net"
	"sync"
)

// limitConns caps the connections ln holds open at once at max (the
// DELAYBRIDGE_*_MAX_CONNS variables): Accept takes no further connection
// until one of those it returned is closed, so clients that open
// connections and leave them idle hold at most max of them, and the ones
// beyond wait in the kernel's backlog instead of the process's memory. The
// servers' idle timeouts close the idle ones that are held. max under 1
// (a configuration built without the variables) leaves ln as it is.
func limitConns(ln net.Listener, max int) net.Listener {
	if max < 1 {
		return ln
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, max), closed: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	slots     chan struct{} // one per connection open
	closed    chan struct{}
	closeOnce sync.Once
}

// Accept waits for a free place, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close stops Accept, waiting or not, and closes the listener.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// limitConn gives its place back when first closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
