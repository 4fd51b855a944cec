package queue

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The id index as the builds before the exact index wrote and read it (git
// 9ddec4f): each whole score kept modulo 2^31 ms. Copied once; never edit it
// to match new code.

// prevModGet is those builds' getScript: {member, score or "", …} or {}.
var prevModGet = redis.NewScript(slotLua + `
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
  if n and n >= 0 and n < 9007199254740992 and n == math.floor(n) then
    return string.format('%.0f', n % wrap)
  end
  return s
end
local function scores(v)
  local n = tonumber(v)
  if not n or n < 0 or n >= wrap or n ~= math.floor(n) then return {v} end
  local lo = redis.call('ZRANGEBYSCORE', sched, '(-inf', '(inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if not lo[2] then return {} end
  local hi = tonumber(redis.call('ZREVRANGEBYSCORE', sched, '(inf', '(-inf', 'WITHSCORES', 'LIMIT', 0, 1)[2])
  local out, c = {}, n + math.max(math.ceil((tonumber(lo[2]) - n) / wrap), 0) * wrap
  while c <= hi do
    out[#out + 1] = string.format('%.0f', c)
    c = c + wrap
  end
  return out
end
local function seek(s, n)
  local lo = redis.call('ZCOUNT', sched, '-inf', '(' .. s)
  local hi = lo + redis.call('ZCOUNT', sched, s, s)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if before(redis.call('ZRANGE', sched, mid, mid)[1], n) then lo = mid + 1 else hi = mid end
  end
  local z = redis.call('ZRANGE', sched, lo, lo, 'WITHSCORES')
  if z[1] and string.sub(z[1], 1, #n) == n and tonumber(z[2]) == tonumber(s) then return z[1] end
  return nil
end
local function seekv(v, n)
  for _, s in ipairs(scores(v)) do
    local m = seek(s, n)
    if m then return m end
  end
  return nil
end
local function flying(n)
  local total = redis.call('ZCARD', inflight)
  for start = 0, total - 1, 1000 do
    for _, m in ipairs(redis.call('ZRANGE', inflight, start, start + 999)) do
      if string.sub(m, 1, #n) == n then return m end
    end
  end
  return nil
end
local function lookup(id)
  local out = {}
  local m = redis.call('HGET', ids, id)
  if m and (redis.call('ZSCORE', sched, m) or redis.call('ZSCORE', inflight, m)) then out[1] = m end
  local n = needle(id)
  if n then
    local s = redis.call('HGET', bucket(id), id)
    if s then
      local c = seekv(s, n) or flying(n)
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
    if v and (v == enc(s) or tonumber(v) == tonumber(s)) and not seekv(v, n) then
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

local m = lookup(ARGV[1])[1]
if not m then return {} end
local score = redis.call('ZSCORE', sched, m)
local lease = redis.call('ZSCORE', inflight, m)
if not score and not lease then return {} end
return {m, score or '', lease or '', redis.call('HGET', dues, m) or '', redis.call('HGET', attempts, m) or '0'}
`)

// TestTheExactAndTheModuloIndexReadEachOther: during a rolling upgrade the
// previous builds find what this one indexed (an exact score is one score
// to them; "123.0" is 123, the lowest score here, its first candidate), and
// this one finds what they indexed (a remainder modulo 2^31)
// by walking only the scores present, then rewrites the entry exactly.
func TestTheExactAndTheModuloIndexReadEachOther(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	k := f.tp.Keys(0)
	now := math.Floor(f.redisNow())
	// Never a due time far from the others here: the previous builds'
	// lookup of a remainder walks every 2^31 ms up to the latest score, on
	// the shared test Redis (TestNoScriptCostsTheSpreadOfDueTimes has its
	// own).
	dues := map[string]float64{"soon": now + 60_000, "year": now + 365*86_400_000, "century": now + 36_500*86_400_000, "early": 123}
	for id, due := range dues {
		if _, err := f.q.ScheduleMember(f.ctx, f.tp, []byte(`{"id":"`+id+`","body":"x"}`), At(MillisTime(due))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.q.ScheduleMember(f.ctx, f.tp, []byte(`{"id":"other","body":"the remainder of soon"}`), At(MillisTime(dues["soon"]+1<<31))); err != nil {
		t.Fatal(err)
	}
	for id, due := range dues {
		if got := f.indexEntries(0)[id]; got != indexValue(due) {
			t.Errorf("index of %s = %q, want the exact %q", id, got, indexValue(due))
		}
		res, err := prevModGet.Run(f.ctx, f.rdb, slotKeys(k), id).StringSlice()
		if err != nil || len(res) < 2 {
			t.Errorf("the previous build's get of %s (exact entry) = %q, %v", id, res, err)
			continue
		}
		if s, _ := strconv.ParseFloat(res[1], 64); s != due {
			t.Errorf("the previous build's get of %s = score %s, want %v", id, res[1], due)
		}
	}
	// Entries as the previous builds wrote them; one message in flight.
	for _, id := range []string{"soon", "year", "early"} {
		if err := f.rdb.HSet(f.ctx, bucketKey(k, id), id, strconv.FormatInt(int64(dues[id])%(1<<31), 10)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for id := range dues {
		info, err := f.q.Get(f.ctx, f.tp, id)
		if err != nil || info.Message.ID != id || !info.Due.Equal(MillisTime(dues[id])) {
			t.Errorf("Get(%s) = %+v due %v, %v", id, info.Message, Millis(info.Due), err)
		}
	}
	for _, id := range []string{"soon", "year", "early"} {
		if got := f.indexEntries(0)[id]; got != indexValue(dues[id]) {
			t.Errorf("a legacy entry of %s found by Get is %q, want it rewritten to %q", id, got, indexValue(dues[id]))
		}
	}
	if ok, err := f.q.CancelID(f.ctx, f.tp, "year"); !ok || err != nil {
		t.Errorf("CancelID(year) = %v, %v", ok, err)
	}
	// A legacy entry of a member in flight is found there.
	f.rdb.HSet(f.ctx, bucketKey(k, "early"), "early", "123")
	if c := f.claim(0, 1, time.Minute); len(c.Messages) != 1 {
		t.Fatalf("claimed %d", len(c.Messages))
	}
	if info, err := f.q.Get(f.ctx, f.tp, "early"); err != nil || info.Message.ID != "early" {
		t.Errorf("Get(early) in flight with a legacy entry = %+v, %v", info.Message, err)
	}
	f.checkIndex()
}
