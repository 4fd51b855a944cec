// Package faultproxy is a TCP proxy for tests: it sits between a client and a
// real server on loopback and breaks the connection on demand (cut, reset,
// stall, slow down), so tests can show what a client does when the network
// misbehaves without mocking the server.
//
// Every goroutine the proxy starts ends when Close returns.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

type mode int

const (
	modeNormal mode = iota
	modeCut
	modeStall
	modeSlow
)

// Proxy forwards TCP connections from Addr to a target address.
type Proxy struct {
	target string
	ln     net.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	mode    mode
	delay   time.Duration
	changed chan struct{} // closed and replaced whenever the mode changes
	conns   map[*pair]struct{}
	closed  bool
}

// New listens on 127.0.0.1:0 and forwards every accepted connection to
// target. The proxy stops when ctx ends or Close is called.
func New(ctx context.Context, target string) (*Proxy, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for proxy to %s: %w", target, err)
	}
	return Serve(ctx, ln, target), nil
}

// Serve forwards every connection ln accepts to target, as New does; the
// proxy owns ln and closes it when it stops. A listener of the test's own
// (one that completes a TLS handshake in Accept, say) puts a server in
// front of target.
func Serve(ctx context.Context, ln net.Listener, target string) *Proxy {
	pctx, cancel := context.WithCancel(ctx)
	p := &Proxy{
		target:  target,
		ln:      ln,
		ctx:     pctx,
		cancel:  cancel,
		changed: make(chan struct{}),
		conns:   make(map[*pair]struct{}),
	}
	p.wg.Add(2)
	go p.acceptLoop()
	go func() {
		defer p.wg.Done()
		<-pctx.Done()
		_ = ln.Close()
		p.closeAll(false)
	}()
	return p
}

// Addr is the host:port clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every open connection and refuses new ones (they are accepted
// and closed at once) until Restore.
func (p *Proxy) Cut() {
	p.setMode(modeCut, 0)
	p.closeAll(false)
}

// Reset closes every open connection now with a TCP RST. New connections are
// accepted and forwarded as before.
func (p *Proxy) Reset() { p.closeAll(true) }

// Stall keeps connections open but forwards no byte in either direction until
// Restore. New connections are accepted, and forward nothing either.
func (p *Proxy) Stall() { p.setMode(modeStall, 0) }

// Slow delays every forwarded chunk by d until Restore.
func (p *Proxy) Slow(d time.Duration) { p.setMode(modeSlow, d) }

// Restore returns to normal forwarding.
func (p *Proxy) Restore() { p.setMode(modeNormal, 0) }

// Conns is the number of open proxied connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.conns {
		select {
		case <-c.done:
		default:
			n++
		}
	}
	return n
}

// Close stops listening, closes every connection and waits for every
// goroutine of the proxy to end. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	return nil
}

func (p *Proxy) setMode(m mode, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.delay = m, d
	close(p.changed)
	p.changed = make(chan struct{})
}

// state is what a forwarding goroutine must do with its next chunk.
func (p *Proxy) state() (mode, time.Duration, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.delay, p.changed
}

func (p *Proxy) closeAll(rst bool) {
	p.mu.Lock()
	all := make([]*pair, 0, len(p.conns))
	for c := range p.conns {
		all = append(all, c)
	}
	p.mu.Unlock()
	for _, c := range all {
		c.close(rst)
	}
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if m, _, _ := p.state(); m == modeCut {
			_ = client.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// serve dials the target for one accepted client and forwards both ways.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	var d net.Dialer
	server, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	c := &pair{client: client, server: server, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed || p.mode == modeCut || p.ctx.Err() != nil {
		p.mu.Unlock()
		c.close(false)
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(c, client, server) }()
	go func() { defer wg.Done(); p.pipe(c, server, client) }()
	wg.Wait()
	c.close(false)
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pipe copies src to dst chunk by chunk, obeying the proxy's mode before each
// write. Any read or write error closes the whole pair.
func (p *Proxy) pipe(c *pair, src, dst net.Conn) {
	defer c.close(false)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.wait(c) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait blocks until the current chunk may be forwarded; false means the pair
// or the proxy closed meanwhile.
func (p *Proxy) wait(c *pair) bool {
	for {
		m, d, changed := p.state()
		switch m {
		case modeNormal:
			return true
		case modeSlow:
			t := time.NewTimer(d)
			select {
			case <-t.C:
				return true
			case <-changed:
				t.Stop()
			case <-c.done:
				t.Stop()
				return false
			case <-p.ctx.Done():
				t.Stop()
				return false
			}
		default: // stalled, or cut while this chunk was read
			select {
			case <-changed:
			case <-c.done:
				return false
			case <-p.ctx.Done():
				return false
			}
		}
	}
}

// pair is one proxied connection: the client's side and the server's side.
type pair struct {
	client, server net.Conn
	once           sync.Once
	done           chan struct{}
}

func (c *pair) close(rst bool) {
	c.once.Do(func() {
		if rst {
			for _, conn := range []net.Conn{c.client, c.server} {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
			}
		}
		_ = c.client.Close()
		_ = c.server.Close()
		close(c.done)
	})
}
