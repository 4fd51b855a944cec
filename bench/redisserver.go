package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// redisServer is a private redis-server started by -redis-server, launched
// as the tests launch theirs (internal/testing/e2etest).
type redisServer struct {
	*e2etest.RedisServer
	dir string
	url string
}

// startRedis runs bin ("auto": redis-server from PATH) on a free port of
// 127.0.0.1, without persistence (appendonly: with appendonly yes and
// appendfsync everysec, for WAITAOF), and waits until it answers.
func startRedis(bin string, appendonly bool) (*redisServer, error) {
	if bin == "auto" {
		p, err := exec.LookPath("redis-server")
		if err != nil {
			return nil, fmt.Errorf("-redis-server auto: %w", err)
		}
		bin = p
	}
	dir, err := os.MkdirTemp("", "delaybridge-bench-redis-*")
	if err != nil {
		return nil, err
	}
	srv, err := e2etest.LaunchRedisServer(bin, "redis-server", dir, redis.Options{}, func(port int, dir string) []string {
		aof := []string{"--appendonly", "no"}
		if appendonly {
			aof = []string{"--appendonly", "yes", "--appendfsync", "everysec"}
		}
		return append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--dir", dir}, aof...)
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("private redis-server: %w", err)
	}
	fmt.Fprintf(os.Stderr, "private redis-server on %s\n", srv.Addr)
	return &redisServer{RedisServer: srv, dir: dir, url: "redis://" + srv.Addr + "/0"}, nil
}

// stop ends the server (it keeps no data) and removes its files.
func (s *redisServer) stop() {
	s.Kill()
	os.RemoveAll(s.dir)
}
