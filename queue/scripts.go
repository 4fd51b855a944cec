package queue

import (
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/luakeys"
)

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
// KEYS[9] -> dead attempts HASH: attempts of a dead member (deadatts)
// KEYS[10] -> id index, envelope topics: the prefix of its buckets (idx)
// KEYS[11] -> recurrences HASH (recur)
// KEYS[12] -> delivered ZSET, envelope id -> known until (ms) (deliv)
// KEYS[13] -> fair heads ZSET, lex "<key>\0<due><member>" (fheads)
// KEYS[14] -> fair waiting ZSET, key -> its head's due time (fwait)
// KEYS[15] -> fair ready ZSET, key -> its turn (fready)
// KEYS[16] -> fair count ZSET, key -> messages scheduled (fcount)
// KEYS[17] -> fair paused HASH, key -> paused since (ms) (fpaused)
// KEYS[18] -> fair limits HASH, "r:<key>" -> rate, "b:<key>" -> bucket (flimits)
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
	return []string{k.Scheduled, k.Inflight, k.Due, k.Attempts, k.Dead, k.DeadReason, k.IDs, k.Paused, k.DeadAttempts, k.Index, k.Recur, k.Delivered,
		k.FairHeads, k.FairWaiting, k.FairReady, k.FairCount, k.FairPaused, k.FairLimits}
}

// slotLua names the keys of slotKeys.
const slotLua = `
local sched, inflight, dues, attempts, dead, reasons, ids, paused = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local deadatts, idx, recur, deliv = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local fheads, fwait, fready, fcount, fpaused, flimits = KEYS[13], KEYS[14], KEYS[15], KEYS[16], KEYS[17], KEYS[18]
`

// nowLua sets the local "now" (ms, integer-valued float) from TIME.
const nowLua = luakeys.NowLua

// idsLua defines the helpers that keep the id index of envelope topics
// right: an id names its member while that member is scheduled or in flight.
// It has two layouts, both read by every script (see docs/migration.md):
//
//   - the index (KEYS[10], "<base>:idx"): idBuckets small HASHes
//     "<base>:idx:<n>", id -> enc(the member's score in the scheduled set),
//     exact: a whole score as its digits ("123.0" below 2^31 ms, so it is
//     never read as a legacy remainder), another as it is. It holds the
//     members whose bytes start with needle(id), the canonical encoding
//     EncodeEnvelope writes: the member is found again at that score by a
//     binary search on that prefix (members of one score sort bytewise),
//     or, while it is in flight, by the same search at each distinct lease
//     deadline of the in-flight set (flying: claimed or renewed batches
//     share one; after walk of them, a ZSCAN with MATCH). The member is
//     stored once; each entry is a few dozen bytes of a listpack. Builds
//     before #40 wrote a whole score modulo 2^31 ms (legacy: digits only,
//     below 2^31); seeklegacy finds such a member by walking only the
//     scores present in the scheduled set (one range query per 25-day
//     window that holds a member, at most walk of them, then a ZSCAN), and
//     seekid rewrites the entry exactly once found, so legacy entries
//     converge (the reaper's sweep visits all of them). Those builds read
//     the exact layout too: a value of 2^31 or more, a fraction or a
//     negative is one score to them, and "123.0" is 123. No lookup costs
//     more than the members it touches: never a loop over the spread of
//     due times (docs/architecture.md, Guarantees 10).
//   - the ids HASH (KEYS[7], ":ids"): id -> member, what every version
//     before 1.5 wrote for every envelope, and what this one still writes for
//     an envelope that is not canonical (an id JSON must escape, fields in
//     another order): it stores the member twice.
//
// A live member the ids HASH names wins over the index (an older producer
// wrote it later); scheduling an id replaces what either names and moves it
// to the index.
//
// idof(m) is the id of an envelope member, or "" when m is not one (cjson
// under pcall, so a malformed member never fails the script). fastid(m) is
// the id of a canonical member, or nil. lookup(id) lists the live members id
// names (at most one per layout). index(m, id, s) records m, just scheduled
// at s, as what id names. moved(m, id, s) follows m to its new score s in the
// scheduled set. unmap(id, m, s) drops what names m, which left both sets
// for good, from the index only while the entry still holds s, its last
// score. unmap_held(id, m) does the same for m that was in flight until now:
// the id's entry is m's (scheduling the id again takes m out of flight); if
// m is scheduled again (a plain ZADD meanwhile), the entry follows it.
const idsLua = `
local function idof(m)
  local ok, v = pcall(cjson.decode, m)
  if ok and type(v) == 'table' and type(v['id']) == 'string' then return v['id'] end
  return ''
end
local function fastid(m)
  return string.match(m, '^{"id":"([^"\\]*)"')
end
local function needle(id)
  if id == '' or string.find(id, '["\\]') then return nil end
  return '{"id":"' .. id .. '"'
end
local function canon(m, id)
  local n = needle(id)
  return n ~= nil and string.sub(m, 1, #n) == n
end
local function bucket(id)
  local h, b = 0, {string.byte(id, 1, -1)}
  for i = 1, #b do h = (h * 31 + b[i]) % 1000003 end
  return idx .. ':' .. (h % 256)
end
local function before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
local wrap = 2147483648
local function enc(s)
  local n = tonumber(s)
  if n and n == math.floor(n) and n > -9007199254740992 and n < 9007199254740992 then
    if n >= 0 and n < wrap then return string.format('%.1f', n) end
    return string.format('%.0f', n)
  end
  return s
end
local function legacy(v)
  return string.find(v, '^%d+$') ~= nil and tonumber(v) < wrap
end
local function holds(v, s)
  if v == enc(s) or tonumber(v) == tonumber(s) then return true end
  local n = tonumber(s)
  return legacy(v) and n ~= nil and n >= 0 and n < 9007199254740992 and n == math.floor(n) and tonumber(v) == n % wrap
end
local function seekz(key, s, n)
  local at = redis.call('ZCOUNT', key, s, s)
  if at == 0 then return nil end -- nothing at s: no member is read
  local lo = redis.call('ZCOUNT', key, '-inf', '(' .. s)
  local hi = lo + at
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if before(redis.call('ZRANGE', key, mid, mid)[1], n) then lo = mid + 1 else hi = mid end
  end
  local z = redis.call('ZRANGE', key, lo, lo, 'WITHSCORES')
  if z[1] and string.sub(z[1], 1, #n) == n and tonumber(z[2]) == tonumber(s) then return z[1] end
  return nil
end
local function scan(key, n)
  local pat = string.gsub(n, '[%*%?%[%]\\]', '\\%0')
  local c = '0'
  repeat
    local r = redis.call('ZSCAN', key, c, 'MATCH', pat .. '*', 'COUNT', 1000)
    c = r[1]
    for i = 1, #r[2], 2 do
      if string.sub(r[2][i], 1, #n) == n then return r[2][i], r[2][i + 1] end
    end
  until c == '0'
  return nil
end
local walk = 64
local function seeklegacy(v, n)
  local r, from = tonumber(v), '-inf'
  for _ = 1, walk do
    local z = redis.call('ZRANGEBYSCORE', sched, from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if not z[2] then return nil end
    local p = tonumber(z[2])
    if z[2] == '-inf' then p = -math.huge end
    if not p or p ~= p or p >= 9007199254740992 then return nil end
    local c = r + math.max(math.ceil((p - r) / wrap), 0) * wrap
    if c >= 9007199254740992 then return nil end
    local cs = string.format('%.0f', c)
    if c == p then
      local m = seekz(sched, cs, n)
      if m then return m, cs end
      from = '(' .. cs
    else
      from = cs
    end
  end
  local m, s = scan(sched, n)
  if m and holds(v, s) then return m, s end
  return nil
end
local function seekid(id, v, n)
  if not legacy(v) then return seekz(sched, v, n) end
  local m, s = seeklegacy(v, n)
  if m then redis.pcall('HSET', bucket(id), id, enc(s)) end -- a full Redis may refuse: the lookup stands
  return m
end
local function flying(n)
  local from = '-inf'
  for _ = 1, walk do
    local z = redis.call('ZRANGEBYSCORE', inflight, from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if not z[2] then return nil end
    local m = seekz(inflight, z[2], n)
    if m then return m end
    from = '(' .. z[2]
  end
  return (scan(inflight, n))
end
local function lookup(id)
  local out = {}
  local m = redis.call('HGET', ids, id)
  if m and (redis.call('ZSCORE', sched, m) or redis.call('ZSCORE', inflight, m)) then out[1] = m end
  local n = needle(id)
  if n then
    local s = redis.call('HGET', bucket(id), id)
    if s then
      local c = seekid(id, s, n) or flying(n)
      if c and c ~= out[1] then out[#out + 1] = c end
    end
  end
  return out
end
local function index(m, id, s)
  if canon(m, id) then
    redis.call('HSET', bucket(id), id, enc(s))
    redis.call('HDEL', ids, id)
  else
    redis.call('HSET', ids, id, m)
    if needle(id) then redis.call('HDEL', bucket(id), id) end
  end
end
local function moved(m, id, s)
  if id and id ~= '' and s and canon(m, id) and redis.call('HGET', ids, id) ~= m then
    redis.call('HSET', bucket(id), id, enc(s))
  end
end
local function unmap(id, m, s)
  if id == '' or redis.call('ZSCORE', sched, m) or redis.call('ZSCORE', inflight, m) then return end
  if redis.call('HGET', ids, id) == m then redis.call('HDEL', ids, id) end
  local n = needle(id)
  if s and n and string.sub(m, 1, #n) == n then
    local key = bucket(id)
    local v = redis.call('HGET', key, id)
    if v and holds(v, s) and not seekid(id, v, n) then
      redis.call('HDEL', key, id)
    end
  end
end
local function unmap_held(id, m)
  if id == '' then return end
  local s = redis.call('ZSCORE', sched, m)
  if s then
    moved(m, id, s)
    return
  end
  if redis.call('HGET', ids, id) == m then redis.call('HDEL', ids, id) end
  if canon(m, id) then redis.call('HDEL', bucket(id), id) end
end
`

// buryLua defines bury(m, why, id, s): move member m, already taken out of
// the scheduled or in-flight set, to the dead set at now with the reason
// why, forget its due record, move its attempts to the dead attempts (so get
// and ls show how often it failed), and drop its id ("" for none) from the
// id index: through unmap with s, its last score, or, when s is nil (m was
// in flight), through unmap_held. Claim (-inf scores), Retry (last or
// permanent failure) and Reap (+inf scores) all dead-letter through it.
// Needs nowLua and idsLua.
const buryLua = `
local function bury(m, why, id, s)
  redis.call('ZADD', dead, now, m)
  redis.call('HSET', reasons, m, why)
  redis.call('HDEL', dues, m)
  local n = redis.call('HGET', attempts, m)
  if n then
    redis.call('HSET', deadatts, m, n)
    redis.call('HDEL', attempts, m)
  else
    redis.call('HDEL', deadatts, m)
  end
  if s then unmap(id, m, s) else unmap_held(id, m) end
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
func slotScript(parts ...string) *redis.Script { return shebangScript("", parts...) }

// indexFamily is KEYS[10], the id index: the one family of keys the slot
// scripts touch without declaring them, its buckets "<idx>:<n>", named by
// a hash of an id that the script often reads from Redis first (a claimed
// member's). They share the slot's hash tag; docs/installation.md says
// which servers this keeps out.
const indexFamily = 10

// shebangScript is a slot script whose source starts with a shebang line
// (allowOOMLua, growLua, or none).
func shebangScript(shebang string, parts ...string) *redis.Script {
	return luakeys.NewScript(shebang+slotLua+strings.Join(parts, ""), indexFamily)
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
const allowOOMLua = luakeys.AllowOOMLua

// drainScript is slotScript that runs while Redis is full (allowOOMLua).
func drainScript(parts ...string) *redis.Script { return shebangScript(allowOOMLua, parts...) }

// growLua, the first line of a script's source, declares a script that
// adds messages: Redis refuses it as a whole, before it runs, while it is at
// its maxmemory. Without it Redis refuses a script only when its first write
// is one that can grow memory, and putLua's first write on an envelope
// topic is a removal: a full Redis would take every envelope a producer
// sent.
const growLua = "#!lua\n"

// growScript is slotScript for the scripts that add messages (growLua).
func growScript(parts ...string) *redis.Script { return shebangScript(growLua, parts...) }

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
