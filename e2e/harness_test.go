// Package e2e runs the built delaybridge binary as a separate process against
// the real Redis and RabbitMQ and checks the guarantees of DESIGN.md by
// counting numbered messages: none lost, none early, duplicates counted.
// The harness (daemon, consumers, plans and counts) is internal/e2etest.
package e2e

import (
	"fmt"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/delaybridge/delaybridge/internal/e2etest"
)

// binary is the daemon, built once for every test with the race detector.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "delaybridge-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary, err = e2etest.Build(dir, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
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
