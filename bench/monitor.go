package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// monitor counts the Redis commands of one process through MONITOR, so a
// Redis shared with other clients still gives that process's own numbers.
// MONITOR prints each command a client sent with the client's address and,
// right after it, the commands a script ran ("[0 lua]"): those are counted
// for the client whose script ran them.
type monitor struct {
	conn  net.Conn
	pid   int
	done  chan struct{}
	mu    sync.Mutex
	calls int // commands the process sent
	cmds  int // those plus the commands their scripts ran
	err   error
}

// startMonitor opens a MONITOR connection and counts the commands of pid.
func startMonitor(ctx context.Context, redisURL string, pid int) (*monitor, error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, err
	}
	if opt.TLSConfig != nil {
		return nil, fmt.Errorf("monitor: TLS is not supported")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", opt.Addr)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	rd := bufio.NewReaderSize(conn, 1<<16)
	send := func(args ...string) error {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := conn.Write([]byte(b.String())); err != nil {
			return err
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			return err
		}
		if !strings.HasPrefix(line, "+") {
			return fmt.Errorf("%s: %s", args[0], strings.TrimSpace(line))
		}
		return nil
	}
	if opt.Password != "" {
		auth := []string{"AUTH", opt.Password}
		if opt.Username != "" {
			auth = []string{"AUTH", opt.Username, opt.Password}
		}
		if err := send(auth...); err != nil {
			conn.Close()
			return nil, fmt.Errorf("monitor: %w", err)
		}
	}
	if err := send("MONITOR"); err != nil {
		conn.Close()
		return nil, fmt.Errorf("monitor: %w", err)
	}
	m := &monitor{conn: conn, pid: pid, done: make(chan struct{})}
	_, redisPort, _ := net.SplitHostPort(opt.Addr)
	go m.read(rd, redisPort)
	return m, nil
}

func (m *monitor) read(rd *bufio.Reader, redisPort string) {
	defer close(m.done)
	ports := socketPorts(m.pid, redisPort)
	refreshed := time.Now()
	owner := false // the last command sent was the process's
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			m.mu.Lock()
			if !strings.Contains(err.Error(), "closed") {
				m.err = err
			}
			m.mu.Unlock()
			return
		}
		// +1795321003.517941 [0 127.0.0.1:50212] "evalsha" ...
		open := strings.IndexByte(line, '[')
		end := strings.IndexByte(line, ']')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(line[open+1 : end])
		if len(fields) != 2 {
			continue
		}
		client := fields[1]
		m.mu.Lock()
		if client == "lua" {
			if owner {
				m.cmds++
			}
			m.mu.Unlock()
			continue
		}
		m.mu.Unlock()
		port := client[strings.LastIndexByte(client, ':')+1:]
		if !ports[port] && time.Since(refreshed) > 200*time.Millisecond {
			ports, refreshed = socketPorts(m.pid, redisPort), time.Now()
		}
		owner = ports[port]
		if owner {
			m.mu.Lock()
			m.calls++
			m.cmds++
			m.mu.Unlock()
		}
	}
}

// stop ends the monitor and returns the counts.
func (m *monitor) stop() (calls, cmds int, err error) {
	m.conn.Close()
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls, m.cmds, m.err
}

// socketPorts lists the local ports of pid's TCP connections to remotePort.
func socketPorts(pid int, remotePort string) map[string]bool {
	inodes := map[string]bool{}
	links, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	for _, l := range links {
		target, err := os.Readlink(l)
		if err == nil && strings.HasPrefix(target, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	want, _ := strconv.Atoi(remotePort)
	ports := map[string]bool{}
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || !inodes[f[9]] {
				continue
			}
			local, remote := f[1], f[2]
			rp, err := strconv.ParseInt(remote[strings.LastIndexByte(remote, ':')+1:], 16, 32)
			if err != nil || int(rp) != want {
				continue
			}
			lp, err := strconv.ParseInt(local[strings.LastIndexByte(local, ':')+1:], 16, 32)
			if err == nil {
				ports[strconv.Itoa(int(lp))] = true
			}
		}
	}
	return ports
}
