package queue

import "github.com/redis/go-redis/v9"

// Every script of one topic×slot takes the same KEYS in the same order,
// built by slotKeys and bound to names by slotLua, so a script reads by what
// a key holds and no call site can pass them in another order. All of them
// share one hash tag, so the call runs on one node of a cluster.
//
// KEYS[1] -> scheduled ZSET (sched)
// KEYS[2] -> inflight ZSET (inflight)
// KEYS[3] -> due HASH (dues)
// KEYS[4] -> attempts HASH (attempts)
// KEYS[5] -> dead ZSET (dead)
// KEYS[6] -> dead reason HASH (reasons)
// KEYS[7] -> ids HASH, envelope topics (ids)
// KEYS[8] -> paused HASH, exists while the topic is paused (paused)
//
// Every script reads "now" from Redis's TIME, in whole milliseconds rounded
// down: a score s is due when s <= now, so an integer score is never claimed
// before its millisecond has begun and a fractional one never before its
// instant.
//
// Scores travel as strings: Redis turns Lua numbers into integers on return,
// which would cut fractional due times.

// slotKeys is the KEYS list of every slot script, in the order slotLua binds.
func slotKeys(k SlotKeys) []string {
	return []string{k.Scheduled, k.Inflight, k.Due, k.Attempts, k.Dead, k.DeadReason, k.IDs, k.Paused}
}

// slotLua names the keys of slotKeys.
const slotLua = `
local sched, inflight, dues, attempts, dead, reasons, ids, paused = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
`

// nowLua sets the local "now" (ms, integer-valued float) from TIME.
const nowLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// idsLua defines the helpers that keep the :ids index (envelope id -> member)
// right: an id names its member while that member is scheduled or in flight.
//
// idof(m) is the id of an envelope member, or "" when m is not one (cjson
// under pcall, so a malformed member never fails the script). Go passes ids
// it decoded itself on the hot paths (ack, retry); idof serves the members a
// script finds on its own (-inf and +inf scores).
// unmap(id, m) drops ids[id] only when it still names m and m is neither
// scheduled nor in flight.
const idsLua = `
local function idof(m)
  local ok, v = pcall(cjson.decode, m)
  if ok and type(v) == 'table' and type(v['id']) == 'string' then return v['id'] end
  return ''
end
local function unmap(id, m)
  if id ~= '' and redis.call('HGET', ids, id) == m
    and not redis.call('ZSCORE', sched, m) and not redis.call('ZSCORE', inflight, m) then
    redis.call('HDEL', ids, id)
  end
end
`

// buryLua defines bury(m, why, id): move member m, already taken out of the
// scheduled or in-flight set, to the dead set at now with the reason why,
// forget its due and attempts records, and drop its id ("" for none) from
// the ids index. Claim (-inf scores), Retry (last or permanent failure) and
// Reap (+inf scores) all dead-letter through it. Needs nowLua and idsLua.
const buryLua = `
local function bury(m, why, id)
  redis.call('ZADD', dead, now, m)
  redis.call('HSET', reasons, m, why)
  redis.call('HDEL', dues, m)
  redis.call('HDEL', attempts, m)
  unmap(id, m)
end
`

// forgetLua defines forget(m): drop the due, attempts and last-error records
// of member m, which left the scheduled and in-flight sets for good (acked,
// cancelled, replaced, swept). The reasons HASH holds the last error of a
// message waiting to retry as well as of a dead one, so the reason stays when
// the same bytes are also in the dead set.
const forgetLua = `
local function forget(m)
  redis.call('HDEL', dues, m)
  redis.call('HDEL', attempts, m)
  if not redis.call('ZSCORE', dead, m) then redis.call('HDEL', reasons, m) end
end
`

// slotScript is a script of one slot: slotLua, then the helpers it needs,
// then its body.
func slotScript(parts ...string) *redis.Script {
	src := slotLua
	for _, p := range parts {
		src += p
	}
	return redis.NewScript(src)
}

// allowOOMLua, the first line of a script's source, lets it run while Redis
// is at its maxmemory (policy noeviction), when Redis refuses every other
// script whose first write could grow memory. A queue fills Redis during a
// long broker outage; the scripts that drain it (claim, ack, release, retry,
// dead-lettering, reap, extend, cancel, purge, requeue, the heartbeat) must
// run then, or a full Redis could never empty without an operator. Each of
// them frees memory or moves a message from one key to another: what they
// add (a lease, an attempt count, a reason) is bounded by the messages they
// take. Scripts that add messages (schedule, bury) are refused (growLua):
// their callers get ErrRedisFull. Both flags need Redis 7.0 or later.
const allowOOMLua = "#!lua flags=allow-oom\n"

// drainScript is slotScript that runs while Redis is full (allowOOMLua).
func drainScript(parts ...string) *redis.Script {
	src := allowOOMLua + slotLua
	for _, p := range parts {
		src += p
	}
	return redis.NewScript(src)
}

// growLua, the first line of a script's source, declares a script that
// adds messages: Redis refuses it as a whole, before it runs, while it is at
// its maxmemory. Without it Redis refuses a script only when its first write
// is one that can grow memory, and putLua's first write on an envelope
// topic is a removal: a full Redis would take every envelope a producer
// sent.
const growLua = "#!lua\n"

// growScript is slotScript for the scripts that add messages (growLua).
func growScript(parts ...string) *redis.Script {
	src := growLua + slotLua
	for _, p := range parts {
		src += p
	}
	return redis.NewScript(src)
}

// flag is a boolean script argument.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func toInt(v any) (int, bool) {
	n, ok := v.(int64)
	return int(n), ok
}

func toArgs(ss []string) []any {
	args := make([]any, len(ss))
	for i, s := range ss {
		args[i] = s
	}
	return args
}
