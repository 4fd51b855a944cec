package flowstate

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/delaybridge/delaybridge/internal/luakeys"
	"github.com/delaybridge/delaybridge/queue"
)

// A replica report is what one replica tells the others, stats and the
// console about a topic that only it knows: that its scanners are held
// (ReportHeld), the limits its environment gives the topic (ReportEnv). A
// report is one field of a small HASH in the topic-wide hash tag
// (FlowKeys), keyed by the replica id, so every replica writes its own and a
// Redis Cluster runs each call on one node. Its value ends with a deadline
// (Redis's clock): the replica renews it, deletes it when it has nothing to
// say any more or shuts down, and the report of a replica that died
// expires by itself.

// reportScript writes or deletes one replica's report.
//
// KEYS[1] -> a report HASH (FlowKeys.Held, FlowKeys.Env)
// ARGV[1] -> replica id
// ARGV[2] -> the report ("" deletes the replica's report)
// ARGV[3] -> ttl, ms
//
// A field is "<report> <deadline ms>". Reports whose deadline passed are
// deleted (a small hash: one field per replica), and the key expires with
// the latest one left. Runs on a full Redis (allowOOMLua): it is one small
// key, one field per replica, whose writes are bounded by the replicas; a
// report that could not be written would hide a held topic or the limits
// in force exactly when Redis is under pressure. Returns 1.
var reportScript = luakeys.NewScript(allowOOMLua + nowLua + `
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. string.format('%.0f', now + tonumber(ARGV[3])))
end
local last = 0
for _, r in ipairs(redis.call('HKEYS', KEYS[1])) do
  local deadline = tonumber(string.match(redis.call('HGET', KEYS[1], r) or '', '(%d+)$'))
  if not deadline or deadline < now then
    redis.call('HDEL', KEYS[1], r)
  else
    last = math.max(last, deadline)
  end
end
if last > 0 then
  redis.call('PEXPIRE', KEYS[1], string.format('%.0f', last - now + 1))
end
return 1
`)

// report writes replica's report into key for ttl ("" deletes it).
func (s *Store) report(ctx context.Context, key, replica, report string, ttl time.Duration) error {
	return reportScript.Run(ctx, s.rdb, []string{key}, replica, report, max(1, ttl.Milliseconds())).Err()
}

// reportsScript returns the reports of a HASH that have not expired.
//
// KEYS[1] -> a report HASH (FlowKeys.Held, FlowKeys.Env)
//
// Returns {replica, field, …}.
var reportsScript = luakeys.NewScript(nowLua + `
local out = {}
for _, r in ipairs(redis.call('HKEYS', KEYS[1])) do
  local v = redis.call('HGET', KEYS[1], r)
  local deadline = tonumber(string.match(v or '', '(%d+)$'))
  if deadline and deadline >= now then
    out[#out + 1] = r
    out[#out + 1] = v
  end
end
return out
`)

// replicaReport is one report as reports reads it.
type replicaReport struct {
	replica, report string
	until           time.Time
}

// reports reads the live reports of key.
func (s *Store) reports(ctx context.Context, key string) ([]replicaReport, error) {
	r, err := reportsScript.Run(ctx, s.rdb, []string{key}).StringSlice()
	if err != nil {
		return nil, err
	}
	var out []replicaReport
	for j := 0; j+1 < len(r); j += 2 {
		i := strings.LastIndexByte(r[j+1], ' ')
		if i < 0 {
			continue
		}
		ms, err := strconv.ParseFloat(r[j+1][i+1:], 64)
		if err != nil {
			continue
		}
		out = append(out, replicaReport{replica: r[j], report: r[j+1][:i], until: queue.MillisTime(ms)})
	}
	return out, nil
}
