package e2etest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartSentinel runs a sentinel of the test's own (SentinelBin
// --sentinel) on a free loopback port that monitors the master at
// masterAddr as master, with quorum 1, and returns once it names that
// master. With a password it has requirepass password, so a client must
// send it; conf are more lines of its configuration (sentinel
// down-after-milliseconds …). It is killed at cleanup, as
// StartRedisServer's servers are.
func StartSentinel(tb testing.TB, master, masterAddr, password string, conf ...string) *RedisServer {
	tb.Helper()
	host, port, err := net.SplitHostPort(masterAddr)
	if err != nil {
		tb.Fatalf("master address %q: %v", masterAddr, err)
	}
	s := startServerBin(tb, SentinelBin(), "sentinel", redis.Options{Password: password}, func(p int, dir string) []string {
		lines := []string{"port " + strconv.Itoa(p), "bind 127.0.0.1", "dir " + dir}
		if password != "" {
			lines = append(lines, "requirepass "+password)
		}
		lines = append(lines, fmt.Sprintf("sentinel monitor %s %s %s 1", master, host, port))
		path := filepath.Join(dir, "sentinel.conf") // sentinel rewrites it: a file of its own
		if err := os.WriteFile(path, []byte(strings.Join(append(lines, conf...), "\n")+"\n"), 0o600); err != nil {
			tb.Fatalf("write %s: %v", path, err)
		}
		return []string{path, "--sentinel"}
	})
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, Password: password})
	defer sc.Close()
	WaitFor(tb, 20*time.Second, "the sentinel names master "+masterAddr, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		hp, err := sc.GetMasterAddrByName(ctx, master).Result()
		return err == nil && len(hp) == 2 && net.JoinHostPort(hp[0], hp[1]) == masterAddr
	})
	return s
}
