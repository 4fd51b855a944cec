package e2etest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartAOFRedis runs ServerBin of the test's own with appendonly yes
// (appendfsync everysec, its default) and its files in dir, so a test can
// kill it (Kill is SIGKILL) and start it again on the same dir, from its
// append-only file. what names its log in dir. It is killed at cleanup.
func StartAOFRedis(tb testing.TB, what, dir string) *RedisServer {
	tb.Helper()
	s, err := LaunchRedisServer(ServerBin(), what, dir, redis.Options{}, func(port int, dir string) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
			"--appendfsync", "everysec", "--dir", dir}
	})
	if err != nil {
		tb.Fatalf("start %s (%s): %v", what, ServerBin(), err)
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

// SkipWithoutWaitAOF skips the test when the server at addr has no WAITAOF
// (Redis and Valkey before 7.2, e.g. this machine's Redis 7.0 under make
// test), saying why and where it runs: make compat against a server that
// has it. It returns the server's redis_version.
func SkipWithoutWaitAOF(tb testing.TB, addr string) string {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		tb.Fatalf("INFO server of %s: %v", addr, err)
	}
	v := ""
	if _, rest, ok := strings.Cut(info, "redis_version:"); ok {
		v, _, _ = strings.Cut(rest, "\r\n")
	}
	cmd, err := rdb.Do(ctx, "command", "info", "waitaof").Slice()
	if err != nil {
		tb.Fatalf("COMMAND INFO WAITAOF on %s: %v", addr, err)
	}
	if len(cmd) != 1 || cmd[0] == nil {
		tb.Skipf("%s (redis_version %s) has no WAITAOF: this test runs under make compat, against a server that has it (%s=…, docs/installation.md)", ServerBin(), v, ServerBinEnv)
	}
	return v
}

// WaitAOFRewritten waits until the server at addr has no AOF rewrite in
// progress or scheduled (CONFIG SET appendonly yes starts one, in a child
// process that a SIGKILL of the server does not end): call it before the
// test ends, so its directory can be removed.
func WaitAOFRewritten(tb testing.TB, addr string) {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	WaitFor(tb, 30*time.Second, "the AOF rewrite on "+addr+" to end", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		info, err := rdb.Info(ctx, "persistence").Result()
		return err == nil && strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0")
	})
}
