package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a private redis-server started by -redis-server.
type redisServer struct {
	cmd  *exec.Cmd
	dir  string
	url  string
	done chan error
}

// startRedis runs bin ("auto": redis-server from PATH) on a free port of
// 127.0.0.1, without persistence, and waits until it answers.
func startRedis(ctx context.Context, bin string) (*redisServer, error) {
	if bin == "auto" {
		p, err := exec.LookPath("redis-server")
		if err != nil {
			return nil, fmt.Errorf("-redis-server auto: %w", err)
		}
		bin = p
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir, err := os.MkdirTemp("", "delaybridge-bench-redis-*")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", "")
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &redisServer{cmd: cmd, dir: dir, url: fmt.Sprintf("redis://127.0.0.1:%d/0", port), done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.stop()
			return nil, fmt.Errorf("private redis-server on port %d did not answer", port)
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "private redis-server on 127.0.0.1:%d\n", port)
	return s, nil
}

func (s *redisServer) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	os.RemoveAll(s.dir)
}
