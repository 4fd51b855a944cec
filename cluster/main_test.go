// Package cluster runs several delaybridge daemons as separate processes
// against one Redis, standalone or a real Redis Cluster, and checks what
// replicated deployments rely on: slots shared fairly, a dead replica's slots
// and leases taken over within the heartbeat TTL, only a newcomer's share
// moving, nothing lost through kills and rolling restarts, no CROSSSLOT error.
//
// The Redis Cluster is the one scripts/redis-cluster.sh starts (`make
// services`); DELAYBRIDGE_TEST_REDIS_CLUSTER_ADDRS names its nodes.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// binary is the daemon, built once for every test.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "delaybridge-cluster")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "delaybridge")
	// -race: handovers run scanners starting and stopping concurrently.
	build := exec.Command("go", "build", "-race", "-o", binary, "../cmd/delaybridge")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build delaybridge:", err)
		os.Exit(1)
	}
	// goleak.VerifyTestMain exits without returning: clean up first.
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func redisURL() string { return env("DELAYBRIDGE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0") }
func amqpURL() string  { return env("DELAYBRIDGE_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/") }
func clusterAddrs() []string {
	return strings.Split(env("DELAYBRIDGE_TEST_REDIS_CLUSTER_ADDRS", "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103"), ",")
}

// uniq is a unique name for this test's keys, exchanges and queues.
func uniq(t *testing.T) string {
	b := make([]byte, 4)
	rand.Read(b)
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	return "cl-" + name + "-" + hex.EncodeToString(b)
}

// backend is the Redis deployment a test runs against.
type backend struct {
	name string
	rdb  redis.UniversalClient
	// vars point a daemon at this Redis.
	vars map[string]string
}

// standalone connects to the single Redis; the keys under prefix are deleted
// when the test ends.
func standalone(t *testing.T, prefix string) *backend {
	t.Helper()
	opt, err := redis.ParseURL(redisURL())
	if err != nil {
		t.Fatalf("parse DELAYBRIDGE_TEST_REDIS_URL %s: %v", redisURL(), err)
	}
	b := &backend{
		name: "standalone",
		rdb:  redis.NewClient(opt),
		vars: map[string]string{"DELAYBRIDGE_REDIS_URL": redisURL()},
	}
	b.connect(t, redisURL(), prefix)
	return b
}

// redisCluster connects to the local Redis Cluster and fails the test when it
// is not there or not healthy.
func redisCluster(t *testing.T, prefix string) *backend {
	t.Helper()
	addrs := clusterAddrs()
	b := &backend{
		name: "cluster",
		rdb:  redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}),
		vars: map[string]string{
			"DELAYBRIDGE_REDIS_ADDRS":   strings.Join(addrs, ","),
			"DELAYBRIDGE_REDIS_CLUSTER": "true",
		},
	}
	where := "Redis Cluster at " + strings.Join(addrs, ",") + " (scripts/redis-cluster.sh start)"
	b.connect(t, where, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := b.rdb.ClusterInfo(ctx).Result()
	if err != nil || !strings.Contains(info, "cluster_state:ok") {
		t.Fatalf("%s is not healthy: %v\n%s", where, err, info)
	}
	if n := len(b.masters(t)); n < 3 {
		t.Fatalf("%s has %d masters, the tests need 3", where, n)
	}
	return b
}

func (b *backend) connect(t *testing.T, where, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.rdb.Ping(ctx).Err(); err != nil {
		b.rdb.Close()
		t.Fatalf("redis at %s is required: %v", where, err)
	}
	t.Cleanup(func() {
		for _, k := range b.keys(t, prefix) {
			b.rdb.Del(context.Background(), k)
		}
		b.rdb.Close()
	})
}

// masters are the clients of the cluster's masters (the one client of a
// standalone Redis).
func (b *backend) masters(t *testing.T) map[string]*redis.Client {
	t.Helper()
	out := map[string]*redis.Client{}
	c, ok := b.rdb.(*redis.ClusterClient)
	if !ok {
		out["standalone"] = b.rdb.(*redis.Client)
		return out
	}
	var mu sync.Mutex
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		mu.Lock()
		out[m.Options().Addr] = m
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatalf("list cluster masters: %v", err)
	}
	return out
}

// keysPerMaster lists the keys under prefix on every master.
func (b *backend) keysPerMaster(t *testing.T, prefix string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for addr, m := range b.masters(t) {
		ctx := context.Background()
		iter := m.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			out[addr] = append(out[addr], iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Fatalf("scan %s: %v", addr, err)
		}
	}
	return out
}

// keys lists the keys under prefix.
func (b *backend) keys(t *testing.T, prefix string) []string {
	t.Helper()
	var all []string
	for _, ks := range b.keysPerMaster(t, prefix) {
		all = append(all, ks...)
	}
	return all
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
