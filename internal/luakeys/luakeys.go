// Package luakeys makes the module's Lua scripts. NewScript is
// redis.NewScript, except in a test binary (testing.Testing), where each
// script is first given a guard: its redis.call and redis.pcall raise an
// error when a command's key argument is not one of the script's KEYS, or
// when the command is not in the guard's table of key positions. A script
// that builds a key name in Lua, or reads one from a hash, works on a
// standalone Redis and breaks on servers that refuse undeclared keys
// (Dragonfly by default) and on a Cluster whose slot does not match: every
// test that runs a script checks that it declares what it touches (see
// docs/installation.md).
package luakeys

import (
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// NewScript is redis.NewScript of src, guarded in a test binary. families
// are the exceptions, kept few and documented: indexes into KEYS (from 1)
// whose sub-keys, "<KEYS[i]>:<anything>", the script may touch though it
// cannot declare them (their names come from data read in the script; they
// share the declared key's hash tag, so a Cluster runs the script on the
// right node, but a server that refuses undeclared keys refuses them).
func NewScript(src string, families ...int) *redis.Script {
	if testing.Testing() {
		src = Guard(src, families...)
	}
	return redis.NewScript(src)
}

// keySpec is where a command's keys are among its arguments (after the
// command name, from 1): first, last (negative: from the end) and step, as
// COMMAND INFO's first-key, last-key and step; first 0: no keys.
type keySpec struct{ first, last, step int }

// keyPositions are the commands the guard lets a script call and where
// their keys are. A command missing here fails the script in tests: add it
// with its key positions.
var keyPositions = map[string]keySpec{
	// No keys.
	"TIME": {}, "PUBLISH": {}, "ECHO": {}, "PING": {},
	// Every argument is a key.
	"DEL": {1, -1, 1}, "UNLINK": {1, -1, 1}, "EXISTS": {1, -1, 1}, "MGET": {1, -1, 1}, "TOUCH": {1, -1, 1},
	// Keys and values alternate.
	"MSET": {1, -1, 2},
	// Two keys first.
	"ZRANGESTORE": {1, 2, 1}, "RENAME": {1, 2, 1}, "COPY": {1, 2, 1}, "SMOVE": {1, 2, 1}, "LMOVE": {1, 2, 1},
	// One key, first.
	"GET": {1, 1, 1}, "SET": {1, 1, 1}, "INCR": {1, 1, 1}, "INCRBY": {1, 1, 1}, "DECR": {1, 1, 1}, "TYPE": {1, 1, 1},
	"EXPIRE": {1, 1, 1}, "PEXPIRE": {1, 1, 1}, "PEXPIREAT": {1, 1, 1}, "PTTL": {1, 1, 1}, "TTL": {1, 1, 1}, "PERSIST": {1, 1, 1},
	"HDEL": {1, 1, 1}, "HEXISTS": {1, 1, 1}, "HGET": {1, 1, 1}, "HGETALL": {1, 1, 1}, "HINCRBY": {1, 1, 1},
	"HKEYS": {1, 1, 1}, "HVALS": {1, 1, 1}, "HLEN": {1, 1, 1}, "HMGET": {1, 1, 1}, "HRANDFIELD": {1, 1, 1},
	"HSCAN": {1, 1, 1}, "HSET": {1, 1, 1}, "HSETNX": {1, 1, 1}, "HMSET": {1, 1, 1},
	"ZADD": {1, 1, 1}, "ZCARD": {1, 1, 1}, "ZCOUNT": {1, 1, 1}, "ZINCRBY": {1, 1, 1}, "ZMSCORE": {1, 1, 1},
	"ZRANGE": {1, 1, 1}, "ZRANGEBYSCORE": {1, 1, 1}, "ZREVRANGEBYSCORE": {1, 1, 1}, "ZRANK": {1, 1, 1},
	"ZREVRANK": {1, 1, 1}, "ZREM": {1, 1, 1}, "ZREMRANGEBYRANK": {1, 1, 1}, "ZREMRANGEBYSCORE": {1, 1, 1},
	"ZREVRANGE": {1, 1, 1}, "ZRANGEBYLEX": {1, 1, 1}, "ZREVRANGEBYLEX": {1, 1, 1}, "ZLEXCOUNT": {1, 1, 1}, "ZREMRANGEBYLEX": {1, 1, 1},
	"ZSCAN": {1, 1, 1}, "ZSCORE": {1, 1, 1}, "ZPOPMIN": {1, 1, 1}, "ZRANDMEMBER": {1, 1, 1},
	"SADD": {1, 1, 1}, "SREM": {1, 1, 1}, "SISMEMBER": {1, 1, 1}, "SMEMBERS": {1, 1, 1}, "SCARD": {1, 1, 1},
	"LPUSH": {1, 1, 1}, "RPUSH": {1, 1, 1}, "LLEN": {1, 1, 1}, "LRANGE": {1, 1, 1}, "LTRIM": {1, 1, 1}, "LREM": {1, 1, 1},
	"XADD": {1, 1, 1}, "XLEN": {1, 1, 1}, "XTRIM": {1, 1, 1}, "XDEL": {1, 1, 1}, "XRANGE": {1, 1, 1},
}

// guardLua is the guard's source: %s is the table of key positions. Its
// names are locals (a script may not set globals); the local redis that
// ends it shadows the global for the rest of the script, whatever else of
// redis the script uses (error_reply, setresp …) read through to it.
const guardLua = `local __redis = redis
local __declared = {}
for _, k in ipairs(KEYS) do __declared[k] = true end
local __keys = {%s}
local __families = {%f}
local function __check(name, k)
  if __declared[k] then return end
  k = tostring(k)
  for _, f in ipairs(__families) do
    local p = KEYS[f] and (KEYS[f] .. ':')
    if p and string.sub(k, 1, #p) == p then return end
  end
  error('luakeys: ' .. name .. ' touches key ' .. k .. ', which the script does not declare in KEYS')
end
local function __guard(cmd, ...)
  local spec = __keys[cmd]
  if spec == nil then
    cmd = string.upper(tostring(cmd))
    spec = __keys[cmd]
    if spec == nil then
      error('luakeys: ' .. cmd .. ' is not in the key guard\'s table (internal/luakeys): add it with its key positions')
    end
  end
  local first, last, step = spec[1], spec[2], spec[3]
  if first == 0 then return end
  if first == 1 and last == 1 then -- the common case: no table of the arguments
    __check(cmd, (...))
    return
  end
  local n = select('#', ...)
  local args = {...}
  if last < 0 then last = n + 1 + last end
  for i = first, math.min(last, n), step do __check(cmd, args[i]) end
end
local redis = setmetatable({
  call = function(cmd, ...) __guard(cmd, ...) return __redis.call(cmd, ...) end,
  pcall = function(cmd, ...) __guard(cmd, ...) return __redis.pcall(cmd, ...) end,
}, {__index = __redis})
`

// Guard is src with the guard (see the package doc and NewScript) put
// first, after its shebang line if it has one.
func Guard(src string, families ...int) string {
	names := make([]string, 0, len(keyPositions))
	for n := range keyPositions {
		names = append(names, n)
	}
	sort.Strings(names)
	entries := make([]string, len(names))
	for i, n := range names {
		s := keyPositions[n]
		entries[i] = n + "={" + strconv.Itoa(s.first) + "," + strconv.Itoa(s.last) + "," + strconv.Itoa(s.step) + "}"
	}
	fams := make([]string, len(families))
	for i, f := range families {
		fams[i] = strconv.Itoa(f)
	}
	guard := strings.Replace(guardLua, "%s", strings.Join(entries, ","), 1)
	guard = strings.Replace(guard, "%f", strings.Join(fams, ","), 1)
	if strings.HasPrefix(src, "#!") {
		line, rest, _ := strings.Cut(src, "\n")
		return line + "\n" + guard + rest
	}
	return guard + src
}

// Preambles every package's scripts start with, written once.
const (
	// NowLua sets the local "now" (ms, an integer-valued float) from
	// Redis's TIME: every replica reads one clock, Redis's.
	NowLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`
	// AllowOOMLua, the first line of a script's source, lets the script run
	// while Redis is at its maxmemory (policy noeviction, Redis 7.0 or
	// later), when Redis refuses every script whose first write could grow
	// memory. Scripts that drain a full Redis (they free memory or move what
	// exists) carry it; scripts that add messages never do.
	AllowOOMLua = "#!lua flags=allow-oom\n"
)
