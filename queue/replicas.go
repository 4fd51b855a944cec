package queue

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"
)

// heartbeatScript renews (or drops) one replica in the replica set and
// returns the live ones.
//
// KEYS[1] -> replicas ZSET (id → heartbeat deadline, ms)
// ARGV[1] -> replica id
// ARGV[2] -> time to live, ms
// ARGV[3] -> "1" to leave the set instead of renewing
//
// Expired replicas are dropped first, by Redis's clock. Returns the live ids.
// (Go sorts them).
var heartbeatScript = redis.NewScript(nowLua + `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now))
if ARGV[3] == '1' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
end
return redis.call('ZRANGE', KEYS[1], 0, -1)
`)

// Heartbeat renews replica id in the replica set of prefix for ttl and
// returns the live replicas (including id).
func (q *Queue) Heartbeat(ctx context.Context, prefix, id string, ttl time.Duration) ([]string, error) {
	return q.heartbeat(ctx, prefix, id, ttl, false)
}

// Leave drops replica id from the replica set so the others take over its
// slots at once, and returns the replicas left.
func (q *Queue) Leave(ctx context.Context, prefix, id string) ([]string, error) {
	return q.heartbeat(ctx, prefix, id, 0, true)
}

func (q *Queue) heartbeat(ctx context.Context, prefix, id string, ttl time.Duration, leave bool) ([]string, error) {
	key := ReplicasKey(prefix)
	flag := "0"
	if leave {
		flag = "1"
	}
	live, err := heartbeatScript.Run(ctx, q.rdb, []string{key}, id, ttl.Milliseconds(), flag).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("heartbeat %s in %s: %w", id, key, err)
	}
	sort.Strings(live)
	return live, nil
}
