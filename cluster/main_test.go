// Package cluster runs several delaybridge daemons as separate processes
// against one Redis, standalone or a real Redis Cluster, and checks what
// replicated deployments rely on: slots shared fairly, a dead replica's slots
// and leases taken over within the heartbeat TTL, only a newcomer's share
// moving, nothing lost through kills and rolling restarts, no CROSSSLOT error.
// The harness (daemons, consumer, plans and counts, Redis keys) is
// internal/testing/e2etest.
//
// The Redis Cluster is the one scripts/redis-cluster.sh starts (`make
// services`); DELAYBRIDGE_TEST_REDIS_CLUSTER_ADDRS names its nodes.
package cluster

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// binary is the daemon, built once for every test.
var binary string

// The race build: handovers run scanners starting and stopping concurrently.
func TestMain(m *testing.M) { e2etest.Main(m, &binary) }

// backend is the Redis deployment a test runs against.
type backend struct {
	rdb redis.UniversalClient
	// vars point a daemon at this Redis.
	vars map[string]string
}

// standalone connects to the single Redis; the keys under prefix are deleted
// when the test ends.
func standalone(t *testing.T, prefix string) *backend {
	t.Helper()
	return &backend{
		rdb:  e2etest.ConnectRedis(t, prefix),
		vars: map[string]string{"DELAYBRIDGE_REDIS_URL": e2etest.RedisURL()},
	}
}

// redisCluster connects to the local Redis Cluster and fails the test when it
// is not there or not healthy; the keys under prefix are deleted when the
// test ends.
func redisCluster(t *testing.T, prefix string) *backend {
	t.Helper()
	return &backend{rdb: e2etest.ConnectRedisCluster(t, prefix), vars: e2etest.RedisClusterVars()}
}
