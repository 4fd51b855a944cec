package e2etest

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/faultproxy"
	"github.com/delaybridge/delaybridge/queue"
)

// Replicated is a private master with one replica whose replication link
// runs through a proxy the test can hold (Link.Stall, Link.Restore): a
// replica that lags, or a partition between them, on demand.
type Replicated struct {
	Master, Replica *RedisServer
	Link            *faultproxy.Proxy
}

// StartReplicated starts a master and a replica of it through a proxy, and
// returns once the replica is in sync. Neither persists anything. Both are
// killed at cleanup.
func StartReplicated(tb testing.TB) *Replicated {
	tb.Helper()
	node := []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0"}
	r := &Replicated{}
	r.Master = StartRedisServer(tb, "master", redis.Options{}, func(port int, dir string) []string {
		return append([]string{"--port", strconv.Itoa(port), "--dir", dir}, node...)
	})
	link, err := faultproxy.New(context.Background(), r.Master.Addr)
	if err != nil {
		tb.Fatalf("proxy to the master: %v", err)
	}
	tb.Cleanup(func() { _ = link.Close() })
	r.Link = link
	host, port, _ := net.SplitHostPort(link.Addr())
	r.Replica = StartRedisServer(tb, "replica", redis.Options{}, func(p int, dir string) []string {
		return append([]string{"--port", strconv.Itoa(p), "--dir", dir, "--replicaof", host, port}, node...)
	})
	r.WaitInSync(tb, 20*time.Second)
	return r
}

// WaitInSync waits until the replica's link is up and the master counts it
// online with a lag of at most a second.
func (r *Replicated) WaitInSync(tb testing.TB, within time.Duration) {
	tb.Helper()
	m := redis.NewClient(&redis.Options{Addr: r.Master.Addr})
	defer m.Close()
	rep := redis.NewClient(&redis.Options{Addr: r.Replica.Addr})
	defer rep.Close()
	WaitFor(tb, within, "the replica in sync with the master", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ri, err := rep.Info(ctx, "replication").Result()
		if err != nil || !strings.Contains(ri, "master_link_status:up") {
			return false
		}
		mi, err := m.Info(ctx, "replication").Result()
		// Valkey 8 adds ",type=replica" after the lag: read the fields.
		return err == nil && queue.CountReplicas(mi, 1) >= 1
	})
}
