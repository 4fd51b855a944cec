package membership

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/delaybridge/delaybridge/internal/luakeys"
	"github.com/delaybridge/delaybridge/queue"
)

// heartbeatScript renews (or drops) one replica in the replica set and
// returns the live ones with their deadlines.
//
// KEYS[1] -> replicas ZSET (id → heartbeat deadline, ms)
// ARGV[1] -> replica id
// ARGV[2] -> time to live, ms
// ARGV[3] -> "1" to leave the set instead of renewing
//
// Expired replicas (deadline at or before Redis's clock) are dropped and
// left out; the ZREMRANGEBYSCORE runs only when one has expired, so an idle
// heartbeat costs two commands (ZADD, ZRANGE). Returns
// {now, id1, deadline1, id2, deadline2, …} in deadline order.
var heartbeatScript = luakeys.NewScript(luakeys.AllowOOMLua + luakeys.NowLua + `
local nowstr = string.format('%.0f', now)
if ARGV[3] == '1' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
end
local out = {nowstr}
local expired = false
local live = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #live, 2 do
  if tonumber(live[i + 1]) <= now then
    expired = true
  else
    out[#out + 1] = live[i]
    out[#out + 1] = live[i + 1]
  end
end
if expired then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowstr)
end
return out
`)

// ReplicaSet is the replica set as one heartbeat saw it.
type ReplicaSet struct {
	// Now is Redis's TIME when the heartbeat ran.
	Now time.Time
	// Live are the ids of the live replicas, sorted.
	Live []string
	// Deadlines are the live replicas' heartbeat deadlines (Redis's clock):
	// a replica that does not renew by then is dropped.
	Deadlines map[string]time.Time
}

// NextExpiry is the earliest deadline of a live replica other than self:
// the moment the set can next change without anyone joining or leaving.
func (s ReplicaSet) NextExpiry(self string) (time.Time, bool) {
	var next time.Time
	found := false
	for id, d := range s.Deadlines {
		if id != self && (!found || d.Before(next)) {
			next, found = d, true
		}
	}
	return next, found
}

// Heartbeat renews replica id in the replica set of prefix for ttl and
// returns the live replicas (including id) with their deadlines.
func (s *Store) Heartbeat(ctx context.Context, prefix, id string, ttl time.Duration) (ReplicaSet, error) {
	return s.heartbeat(ctx, prefix, id, ttl, false)
}

// Leave drops replica id from the replica set so the others take over its
// slots at once, and returns the replicas left.
func (s *Store) Leave(ctx context.Context, prefix, id string) ([]string, error) {
	set, err := s.heartbeat(ctx, prefix, id, 0, true)
	return set.Live, err
}

// heartbeat runs heartbeatScript: renew (or, with leave, drop) id.
func (s *Store) heartbeat(ctx context.Context, prefix, id string, ttl time.Duration, leave bool) (ReplicaSet, error) {
	key := queue.ReplicasKey(prefix)
	res, err := heartbeatScript.Run(ctx, s.rdb, []string{key}, id, ttl.Milliseconds(), flag(leave)).StringSlice()
	if err != nil {
		return ReplicaSet{}, fmt.Errorf("heartbeat %s in %s: %w", id, key, err)
	}
	set, err := parseReplicaSet(key, res)
	if err != nil {
		return ReplicaSet{}, fmt.Errorf("heartbeat %s: %w", id, err)
	}
	return set, nil
}

// parseReplicaSet reads {now, id1, deadline1, …} of key.
func parseReplicaSet(key string, res []string) (ReplicaSet, error) {
	if len(res)%2 != 1 {
		return ReplicaSet{}, fmt.Errorf("%s: malformed reply of %d elements", key, len(res))
	}
	ms := func(v string) (time.Time, error) {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: parse %q: %w", key, v, err)
		}
		return queue.MillisTime(f), nil
	}
	s := ReplicaSet{Deadlines: make(map[string]time.Time, len(res)/2)}
	var err error
	if s.Now, err = ms(res[0]); err != nil {
		return ReplicaSet{}, err
	}
	for i := 1; i < len(res); i += 2 {
		d, err := ms(res[i+1])
		if err != nil {
			return ReplicaSet{}, err
		}
		s.Live = append(s.Live, res[i])
		s.Deadlines[res[i]] = d
	}
	sort.Strings(s.Live)
	return s, nil
}

// maxReplicas bounds what Replicas reads of the replica set.
const maxReplicas = 10000

// replicasScript reads the live replicas without changing the set.
//
// KEYS[1] -> replicas ZSET (id → heartbeat deadline, ms)
// ARGV[1] -> most replicas to return
//
// Returns {now, id1, deadline1, …} in deadline order: the replicas whose
// deadline is after Redis's now, as heartbeatScript counts them live.
var replicasScript = luakeys.NewScript(luakeys.NowLua + `
local nowstr = string.format('%.0f', now)
local out = {nowstr}
local live = redis.call('ZRANGE', KEYS[1], '(' .. nowstr, '+inf', 'BYSCORE', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[1]))
for i = 1, #live do
  out[#out + 1] = live[i]
end
return out
`)

// Replicas reads the live replicas of prefix as the daemons see them, for
// inspection: it renews and drops nothing.
func (s *Store) Replicas(ctx context.Context, prefix string) (ReplicaSet, error) {
	key := queue.ReplicasKey(prefix)
	res, err := replicasScript.Run(ctx, s.rdb, []string{key}, maxReplicas).StringSlice()
	if err != nil {
		return ReplicaSet{}, fmt.Errorf("read replicas in %s: %w", key, err)
	}
	return parseReplicaSet(key, res)
}
