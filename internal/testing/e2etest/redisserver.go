package e2etest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server (or sentinel) of the test's own on a free
// loopback port, for what the shared test Redis cannot be: TLS only, a
// replica, a sentinel. Its data is the test's alone; it is killed at
// cleanup.
type RedisServer struct {
	Addr    string
	LogFile string // its standard output and error
	cmd     *exec.Cmd
	exited  chan error
}

// ServerBinEnv and SentinelBinEnv name the variables that point the tests at
// another server than the machine's Redis (make compat: Valkey's
// valkey-server and valkey-sentinel, see docs/installation.md).
const (
	ServerBinEnv   = "REDIS_SERVER"
	SentinelBinEnv = "REDIS_SENTINEL"
)

// ServerBin is the server binary the tests start: $REDIS_SERVER, default
// redis-server.
func ServerBin() string { return getenv(ServerBinEnv, "redis-server") }

// SentinelBin is the binary a test's sentinel runs (with --sentinel):
// $REDIS_SENTINEL, else redis-sentinel when it is installed, else
// ServerBin (a server started with --sentinel is a sentinel).
func SentinelBin() string {
	if v := os.Getenv(SentinelBinEnv); v != "" {
		return v
	}
	if _, err := exec.LookPath("redis-sentinel"); err == nil && os.Getenv(ServerBinEnv) == "" {
		return "redis-sentinel"
	}
	return ServerBin()
}

// StartRedisServer runs ServerBin with the arguments args gives for a
// free port and a directory of its own, and returns once a client made from
// ping (its Addr set to the server's) gets an answer to PING. A port taken
// meanwhile makes it try another. It fails the test when redis-server is
// not installed: a test that skipped would let what it covers break unseen.
// When the test failed, the server's log is shown at cleanup.
func StartRedisServer(tb testing.TB, what string, ping redis.Options, args func(port int, dir string) []string) *RedisServer {
	tb.Helper()
	return startServerBin(tb, ServerBin(), what, ping, args)
}

func startServerBin(tb testing.TB, bin, what string, ping redis.Options, args func(port int, dir string) []string) *RedisServer {
	tb.Helper()
	if _, err := exec.LookPath(bin); err != nil {
		tb.Fatalf("%s is required to run a %s of the test's own (%s, %s): %v", bin, what, ServerBinEnv, SentinelBinEnv, err)
	}
	s, err := LaunchRedisServer(bin, what, tb.TempDir(), ping, args)
	if err != nil {
		tb.Fatalf("start %s: %v", what, err)
	}
	tb.Cleanup(func() {
		s.Kill()
		if tb.Failed() {
			b, _ := os.ReadFile(s.LogFile)
			tb.Logf("%s %s log:\n%s", what, s.Addr, tail(string(b), 6000))
		}
	})
	return s
}

// launchTries is how many free ports LaunchRedisServer tries: another
// process may take the port between the probe and redis-server's bind.
const launchTries = 5

// LaunchRedisServer is StartRedisServer for a program (the benchmark): bin
// is the redis-server binary, dir holds its files and log, and the caller
// Kills it.
func LaunchRedisServer(bin, what, dir string, ping redis.Options, args func(port int, dir string) []string) (*RedisServer, error) {
	var lastErr error
	for range launchTries {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		s := &RedisServer{Addr: fmt.Sprintf("127.0.0.1:%d", port), LogFile: filepath.Join(dir, what+".log"), exited: make(chan error, 1)}
		if lastErr = s.run(bin, args(port, dir), ping); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

func (s *RedisServer) run(bin string, args []string, ping redis.Options) error {
	out, err := os.Create(s.LogFile)
	if err != nil {
		return fmt.Errorf("create %s: %w", s.LogFile, err)
	}
	defer out.Close() // the child has its own descriptor
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start %s %v: %w", bin, args, err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	ping.Addr, ping.MaxRetries = s.Addr, -1
	c := redis.NewClient(&ping)
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return nil
		}
		select {
		case werr := <-s.exited:
			s.exited <- werr // for Kill
			b, _ := os.ReadFile(s.LogFile)
			return fmt.Errorf("redis-server %v exited (%v): %s", args, werr, tail(string(b), 2000))
		default:
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redis-server on %s does not answer: %w", s.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill ends the server at once; calling it again is harmless.
func (s *RedisServer) Kill() {
	_ = s.cmd.Process.Kill()
	werr := <-s.exited
	s.exited <- werr
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
