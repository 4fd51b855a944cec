// Package redistest owns how tests reach the shared test Redis: its address
// (DELAYBRIDGE_TEST_REDIS_URL, default redis://127.0.0.1:6379/0), a client
// that fails the test loudly when Redis does not answer (never a skip: a
// test that cannot run must not pass), and a key prefix of the test's own
// whose keys are deleted, found with SCAN, when the test ends. Tests of many
// packages share one Redis and run in parallel, so the prefix is what keeps
// them apart.
//
// The processes that tests start (redis-server, the daemon) are
// internal/testing/e2etest's.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// EnvURL names the variable that points the tests at another Redis.
const EnvURL = "DELAYBRIDGE_TEST_REDIS_URL"

// pingTimeout bounds the first PING: a Redis that takes longer is as good as
// down for a test.
const pingTimeout = 10 * time.Second

// URL is the test Redis.
func URL() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// Options are the go-redis options of URL; a URL that does not parse fails
// the test.
func Options(tb testing.TB) *redis.Options {
	tb.Helper()
	opt, err := redis.ParseURL(URL())
	if err != nil {
		tb.Fatalf("parse %s %q: %v", EnvURL, URL(), err)
	}
	// as the daemon's clients (redisclient.NoMaintNotifications): go-redis's
	// auto mode races between a client's Pub/Sub and pooled connections
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return opt
}

// Connect returns a client of the test Redis, closed when the test ends. The
// test fails at once when Redis does not answer.
func Connect(tb testing.TB) *redis.Client {
	tb.Helper()
	rdb := redis.NewClient(Options(tb))
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		tb.Fatalf("Redis at %s is required and not reachable (start it, or set %s): %v", URL(), EnvURL, err)
	}
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Prefix is a key prefix no other test uses, from the test's name and a
// random suffix. Every key under it ("<prefix>…", and "{<prefix>…" for keys
// that wrap it in a hash tag) is deleted when the test ends; register it
// after Connect, so the cleanup runs while the client is open.
func Prefix(tb testing.TB, rdb redis.UniversalClient) string {
	tb.Helper()
	name := strings.NewReplacer("/", "-", " ", "_", "*", "_", "?", "_", "[", "_", "]", "_", "#", "-").Replace(tb.Name())
	prefix := "test:" + name + ":" + Suffix()
	tb.Cleanup(func() {
		if err := DeleteKeys(context.Background(), rdb, prefix); err != nil {
			tb.Errorf("clean up %s: %v", prefix, err)
		}
	})
	return prefix
}

// New is Connect and Prefix.
func New(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	rdb := Connect(tb)
	return rdb, Prefix(tb, rdb)
}

// Suffix is 12 random hex digits.
func Suffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// scanCount is the COUNT of each SCAN: large enough that a cleanup of a
// few thousand keys takes a few round trips.
const scanCount = 1000

// DeleteKeys deletes every key under prefix (see Prefix), finding them with
// SCAN rather than KEYS so a large shared Redis is not blocked.
func DeleteKeys(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	for _, pattern := range []string{prefix + "*", "{" + prefix + "*"} {
		iter := rdb.Scan(ctx, 0, pattern, scanCount).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return fmt.Errorf("scan %s: %w", pattern, err)
		}
		for _, k := range keys {
			if err := rdb.Del(ctx, k).Err(); err != nil {
				return fmt.Errorf("delete %s: %w", k, err)
			}
		}
	}
	return nil
}
