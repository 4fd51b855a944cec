// Package e2e runs the built delaybridge binary as a separate process against
// the real Redis and RabbitMQ and checks the guarantees of
// docs/architecture.md by counting numbered messages: none lost, none early,
// duplicates counted.
// The harness (daemon, consumers, plans and counts) is internal/testing/e2etest.
package e2e

import (
	"maps"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// binary is the daemon, built once for every test with the race detector.
var binary string

func TestMain(m *testing.M) { e2etest.Main(m, &binary) }

// startDaemon runs the daemon against the test Redis and RabbitMQ with vars
// and waits until it serves HTTP.
func startDaemon(t *testing.T, vars map[string]string) *e2etest.Daemon {
	t.Helper()
	all := map[string]string{
		"DELAYBRIDGE_REDIS_URL": e2etest.RedisURL(),
		"DELAYBRIDGE_AMQP_URL":  e2etest.AMQPURL(),
	}
	maps.Copy(all, vars)
	return e2etest.Start(t, binary, all)
}

// stop sends SIGTERM and fails the test unless the daemon exits 0 in time.
func stop(t *testing.T, d *e2etest.Daemon) {
	t.Helper()
	if err := d.Stop(30 * time.Second); err != nil {
		t.Errorf("daemon exit: %v", err)
	}
}

// expectEmpty fails the test if Redis holds anything under prefix.
func expectEmpty(t *testing.T, rdb redis.UniversalClient, prefix string) {
	t.Helper()
	if left := e2etest.Keys(t, rdb, prefix); len(left) != 0 {
		t.Errorf("redis still holds %v", left)
	}
}
