package e2etest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// ConnectRedis connects to the test Redis and, at cleanup, deletes every key
// under prefix and closes the client.
func ConnectRedis(tb testing.TB, prefix string) *redis.Client {
	tb.Helper()
	rdb := redis.NewClient(redistest.Options(tb))
	connect(tb, rdb, RedisURL(), prefix)
	return rdb
}

// ConnectRedisCluster connects to the local Redis Cluster and fails the test
// unless it is healthy with three masters or more. At cleanup it deletes
// every key under prefix on every master and closes the client.
func ConnectRedisCluster(tb testing.TB, prefix string) *redis.ClusterClient {
	tb.Helper()
	addrs := RedisClusterAddrs()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	where := "Redis Cluster at " + strings.Join(addrs, ",") + " (scripts/redis-cluster.sh start)"
	connect(tb, rdb, where, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := rdb.ClusterInfo(ctx).Result()
	if err != nil || !strings.Contains(info, "cluster_state:ok") {
		tb.Fatalf("%s is not healthy: %v\n%s", where, err, info)
	}
	if n := len(Masters(tb, rdb)); n < 3 {
		tb.Fatalf("%s has %d masters, the tests need 3", where, n)
	}
	return rdb
}

// RedisClusterVars point a daemon at the local Redis Cluster.
func RedisClusterVars() map[string]string {
	return map[string]string{
		"DELAYBRIDGE_REDIS_ADDRS":   strings.Join(RedisClusterAddrs(), ","),
		"DELAYBRIDGE_REDIS_CLUSTER": "true",
	}
}

// connect pings rdb, failing the test with where when it does not answer,
// and registers the cleanup of prefix.
func connect(tb testing.TB, rdb redis.UniversalClient, where, prefix string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		tb.Fatalf("redis at %s is required: %v", where, err)
	}
	tb.Cleanup(func() {
		DeleteKeys(rdb, prefix)
		_ = rdb.Close()
	})
}

// Masters are the clients of a Redis Cluster's masters by address, or the
// one client of a standalone Redis.
func Masters(tb testing.TB, rdb redis.UniversalClient) map[string]*redis.Client {
	tb.Helper()
	out, err := masters(context.Background(), rdb)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func masters(ctx context.Context, rdb redis.UniversalClient) (map[string]*redis.Client, error) {
	out := map[string]*redis.Client{}
	switch c := rdb.(type) {
	case *redis.Client:
		out[c.Options().Addr] = c
	case *redis.ClusterClient:
		var mu sync.Mutex
		err := c.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
			mu.Lock()
			out[m.Options().Addr] = m
			mu.Unlock()
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list cluster masters: %w", err)
		}
	default:
		return nil, fmt.Errorf("masters of a %T", rdb)
	}
	return out, nil
}

// KeysPerMaster lists the keys under prefix but the topic registry on every master (one entry for
// a standalone Redis).
func KeysPerMaster(tb testing.TB, rdb redis.UniversalClient, prefix string) map[string][]string {
	tb.Helper()
	out, err := keysPerMaster(context.Background(), rdb, prefix)
	if err != nil {
		tb.Fatal(err)
	}
	registry := queue.TopicsKey(prefix)
	for addr, keys := range out {
		out[addr] = slices.DeleteFunc(keys, func(k string) bool { return k == registry })
	}
	return out
}

func keysPerMaster(ctx context.Context, rdb redis.UniversalClient, prefix string) (map[string][]string, error) {
	ms, err := masters(ctx, rdb)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for addr, m := range ms {
		iter := m.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			out[addr] = append(out[addr], iter.Val())
		}
		if err := iter.Err(); err != nil {
			return nil, fmt.Errorf("scan %s: %w", addr, err)
		}
	}
	return out, nil
}

// Keys lists the keys under prefix, on every master of a cluster, but for
// the topic registry (KeysPerMaster leaves it out too): daemons keep it on
// purpose, so a drained topic is one with no other key.
func Keys(tb testing.TB, rdb redis.UniversalClient, prefix string) []string {
	tb.Helper()
	var all []string
	for _, ks := range KeysPerMaster(tb, rdb, prefix) {
		all = append(all, ks...)
	}
	return all
}

// DeleteKeys deletes every key that starts with prefix (and the hash-tagged
// keys of topics under it), on every master of a cluster.
func DeleteKeys(rdb redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	perMaster, err := keysPerMaster(ctx, rdb, prefix)
	if err != nil {
		return // nothing to clean up in a Redis that does not answer
	}
	for _, keys := range perMaster {
		for _, k := range keys {
			rdb.Del(ctx, k) // a cluster client sends it to the key's master
		}
	}
}
