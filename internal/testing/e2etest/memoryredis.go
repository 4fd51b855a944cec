package e2etest

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// StartPolicyRedis is a redis-server of the test's own, without persistence,
// whose maxmemory-policy is policy: for the tests of a Redis that is full
// (FillRedis) or evicts, which must never bend the shared test Redis.
func StartPolicyRedis(tb testing.TB, policy string) *RedisServer {
	tb.Helper()
	return StartRedisServer(tb, "redis-"+policy, redis.Options{}, func(port int, dir string) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--maxmemory-policy", policy}
	})
}

// FillRedis sets the maxmemory of the Redis rdb reaches to one byte: under
// noeviction it then refuses every write that could grow memory, however
// much is freed, so a test sees each step run on a full Redis.
func FillRedis(tb testing.TB, ctx context.Context, rdb redis.Cmdable) {
	tb.Helper()
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		tb.Fatalf("CONFIG SET maxmemory: %v", err)
	}
	if err := rdb.Set(ctx, "fill-probe", "x", 0).Err(); !redis.IsOOMError(err) {
		tb.Fatalf("SET on a full Redis: %v, want OOM", err)
	}
}
