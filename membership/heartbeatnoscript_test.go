package membership_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// TestHeartbeatOnARedisThatLostItsScriptsNeedsNoScriptLoad: after Redis
// loses its scripts (a restart, a failover), the heartbeat's pipeline gets
// NOSCRIPT; it runs the script with EVAL, which the daemon's ACL grants,
// never SCRIPT LOAD, which it does not, and reads the reports as usual.
func TestHeartbeatOnARedisThatLostItsScriptsNeedsNoScriptLoad(t *testing.T) {
	s := e2etest.StartPolicyRedis(t, "noeviction")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer admin.Close()
	const prefix = "hbns"
	if err := admin.Do(ctx, "ACL", "SETUSER", "daemon", "reset", "on", ">pw", "~"+prefix+":*",
		"-@all", "+ping", "+evalsha", "+eval", "+time", "+zadd", "+zrem", "+zrange", "+zremrangebyscore",
		"+hset", "+hgetall", "+hdel", "+pexpire").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "daemon", Password: "pw"})
	defer rdb.Close()
	q := membership.New(queue.New(rdb))
	if err := q.ReportServed(ctx, prefix, "b", []string{"orders"}, []string{"b"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Heartbeat(ctx, prefix, "b", time.Minute); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if i == 1 {
			if err := admin.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		b, err := q.Beat(ctx, prefix, "a", time.Minute)
		set, fw, readErr := b.Set, b.Forwarding, b.ReadErr
		if err != nil || readErr != nil {
			t.Fatalf("heartbeat %d (script cache flushed before the second): %v, read %v", i+1, err, readErr)
		}
		if len(set.Live) != 2 || !fw.Forwards("b", "orders") || fw.Forwards("b", "digests") {
			t.Fatalf("heartbeat %d: live %v, reports %v; want a and b, b forwarding orders only", i+1, set.Live, fw.Served)
		}
	}
}
