package e2etest

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

// RedisURL is the Redis the tests use (see internal/testing/redistest).
func RedisURL() string { return redistest.URL() }

// RedisClusterAddrs are the nodes of the local Redis Cluster that
// scripts/redis-cluster.sh starts.
func RedisClusterAddrs() []string {
	return strings.Split(getenv("DELAYBRIDGE_TEST_REDIS_CLUSTER_ADDRS", "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103"), ",")
}

// AMQPURL is the RabbitMQ the tests use.
func AMQPURL() string {
	return getenv("DELAYBRIDGE_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Unique is a name for one test's keys, exchanges and queues: the test's
// name made safe, and a random suffix.
func Unique(tb testing.TB) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := strings.NewReplacer("/", "-", " ", "-", "#", "-").Replace(tb.Name())
	return name + "-" + hex.EncodeToString(b)
}

// WithHost is rawURL with its host:port replaced by hostport (to put a
// fault proxy in front of a service, keeping credentials and path).
func WithHost(tb testing.TB, rawURL, hostport string) string {
	tb.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		tb.Fatalf("parse %s: %v", rawURL, err)
	}
	u.Host = hostport
	return u.String()
}

// HostPort is the host:port of rawURL.
func HostPort(tb testing.TB, rawURL string) string {
	tb.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		tb.Fatalf("parse %s: %v", rawURL, err)
	}
	return u.Host
}

// WaitFor polls cond every 50ms until it holds, failing the test after
// within.
func WaitFor(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
