package queue

import "fmt"

// fairTakeLua defines fair_take(limit, horizon): take up to limit members
// due by horizon from the scheduled set of a fair topic, round-robin among
// keys (see fair.go), and return them as {m1, s1, m2, s2, …} in the order
// taken, and whether the claim should be made again at once (keys are still
// ready, or waiting keys are due that this call did not promote). Needs
// slotLua and fairLua.
//
// Each pass of the loop serves the key at the head of ready: it reads its
// share q of entries (plus one, its next head), checks them against the
// scheduled set with one ZMSCORE, takes the due ones, and either drops a
// stale entry (its member gone or moved) or re-places the key. A pass takes
// a message or drops an entry or moves a key out of ready, and there are at
// most 2 × limit + 16 passes: the cost is bounded by limit.
const fairTakeLua = `
local function key_rate(k)
  local v = redis.call('HGET', flimits, 'r:' .. k)
  if not v then v = ARGV[6] end
  local r = tonumber(v or '')
  if not r or r <= 0 then return nil end
  return r / 1000 / math.max(tonumber(ARGV[7] or '') or 1, 1)
end
local function key_tokens(k, rate)
  local burst = math.max(1, rate * 1000)
  local b = redis.call('HGET', flimits, 'b:' .. k)
  if not b then return burst end
  local t0, a0 = string.match(b, '^(%S+) (%S+)$')
  t0, a0 = tonumber(t0), tonumber(a0)
  if not t0 or not a0 then return burst end
  return math.min(burst, t0 + math.max(now - a0, 0) * rate)
end
local function fair_take(limit, horizon)
  local hs = string.format('%.0f', horizon)
  if zc(sched, horizon) > 0 then
    local head = redis.call('ZRANGE', sched, 0, 0, 'WITHSCORES')
    fair_add(head[1], head[2])
  end
  local due = redis.call('ZRANGEBYSCORE', fwait, '-inf', hs, 'LIMIT', 0, math.min(limit, 1000))
  if #due > 0 then
    local seq, add = ftail(), {}
    for i, k in ipairs(due) do
      add[#add + 1] = seq + i - 1
      add[#add + 1] = k
    end
    redis.call('ZREM', fwait, unpack(due))
    redis.call('ZADD', fready, unpack(add))
  end
  -- with no rate for the topic or any key and no key paused, a key's
  -- turn reads neither hash
  local rated = (tonumber(ARGV[6] or '') or 0) > 0 or redis.call('EXISTS', flimits) == 1
  local anypaused = redis.call('EXISTS', fpaused) == 1
  local out, left, passes = {}, limit, 2 * limit + 16
  while left > 0 and passes > 0 do
    passes = passes - 1
    local k = redis.call('ZRANGE', fready, 0, 0)[1]
    if not k then break end
    local rate = rated and key_rate(k)
    local tokens = rate and key_tokens(k, rate)
    if anypaused and redis.call('HGET', fpaused, k) then
      -- paused (PauseKey): out of turn until ResumeKey puts it back
      redis.call('ZREM', fready, k)
    elseif tokens and tokens < 1 then
      -- over its rate: waits for its next tokens, 20 ms' worth (at least
      -- one, at most the burst: a fast key is not claimed one message a
      -- millisecond), after the horizon, so the claim is not made again at
      -- once
      local need = math.max(1, math.min(math.max(1, rate * 1000), rate * 20))
      redis.call('ZREM', fready, k)
      redis.call('ZADD', fwait, string.format('%.0f', math.max(now + math.ceil((need - tokens) / rate), horizon + 1)), k)
    else
      local q = math.max(1, math.floor(left / redis.call('ZCARD', fready)))
      if tokens then q = math.min(q, math.floor(tokens)) end
      local es = redis.call('ZRANGEBYLEX', fheads, '[' .. k .. '\0', '(' .. k .. '\1', 'LIMIT', 0, q + 1)
      if #es == 0 then
        redis.call('ZREM', fready, k)
        redis.call('ZREM', fcount, k)
      else
        local skip = #k + 1
        local ms = {}
        for i = 1, #es do ms[i] = string.sub(es[i], skip + 9) end
        local ss = redis.call('ZMSCORE', sched, unpack(ms))
        local took, tm, stop = 0, {}, nil
        -- a burst's members share their score: its bytes are made once
        local ls, lo = nil, nil
        for i = 1, #es do
          local s = ss[i]
          if s and s ~= ls then ls, lo = s, ford(s) end
          if took == q or not s or fnum(s) > horizon or string.sub(es[i], skip + 1, skip + 8) ~= lo then
            stop = i
            break
          end
          took = took + 1
          tm[took] = ms[i]
          out[#out + 1] = ms[i]
          out[#out + 1] = s
        end
        if took > 0 then
          -- the entries taken are the first of the key's range in heads
          redis.call('ZREMRANGEBYLEX', fheads, '[' .. k .. '\0', '[' .. es[took])
          -- taken in the scheduled set's order: when the first and the
          -- last are its first and took-th, they are its first took
          if redis.call('ZRANGE', sched, 0, 0)[1] == tm[1] and (took == 1 or redis.call('ZRANGE', sched, took - 1, took - 1)[1] == tm[took]) then
            redis.call('ZREMRANGEBYRANK', sched, 0, took - 1)
          else
            redis.call('ZREM', sched, unpack(tm))
          end
          left = left - took
          if tokens then redis.call('HSET', flimits, 'b:' .. k, string.format('%.6f %.0f', tokens - took, now)) end
        end
        local gone = took
        if stop then
          local s = ss[stop]
          if not s then
            redis.call('ZREM', fheads, es[stop])
            gone = gone + 1
          elseif string.sub(es[stop], skip + 1, skip + 8) ~= ford(s) then
            redis.call('ZREM', fheads, es[stop])
            gone = gone + 1
            fair_add(ms[stop], s)
          elseif fnum(s) > horizon then
            redis.call('ZREM', fready, k)
            redis.call('ZADD', fwait, s, k)
          else
            redis.call('ZADD', fready, ftail(), k)
          end
        end
        fair_dec(k, gone)
        if not stop and redis.call('ZSCORE', fcount, k) then
          -- every entry read was taken and the key has more: its next turn
          -- finds them (or drops its stale count).
          redis.call('ZADD', fready, ftail(), k)
        end
      end
    end
  end
  local again = redis.call('ZCARD', fready) > 0
  if not again then
    local w = redis.call('ZRANGE', fwait, 0, 0, 'WITHSCORES')
    again = w[2] ~= nil and fnum(w[2]) <= horizon
  end
  return out, again
end
`

// fairClaimScript is claimScript for a fair topic: the same KEYS, ARGV
// (and ARGV[6], the topic's KeyRateLimit per second, ARGV[7] its slot
// count) and reply, with the members chosen by fair_take instead of the
// lowest scores. The due ones come first in the order taken (round-robin
// among keys, due order within a key), so a key with one due message is
// published early in a batch another key's burst fills; those claimed ahead
// follow in score order (the forwarder hands a claim ahead over as its
// members fall due, in the order returned). next is "" after a full
// batch, now when fair_take says to claim again before the batch is full
// (its turns ran out), else the scheduled set's lowest score.
var fairClaimScript = drainScript(nowLua, idsLua, buryLua, recurLua, tickLua, fairLua, firstScoreLua, fairTakeLua,
	fmt.Sprintf("local chunk = %d\n", claimChunk), leaseClaimedLua, `
local out = {string.format('%.3f', tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000), '', '0', '0'}
if redis.call('HLEN', paused) > 0 then
  out[3] = '1'
  return out
end
local horizon = now + math.max(tonumber(ARGV[4] or '0') or 0, 0)
local within = tonumber(ARGV[5] or '') or 0
local limit = tonumber(ARGV[1])
local deadline = horizon + tonumber(ARGV[2])
local envelopes = ARGV[3] == '1'
-- what is due first: members due within the look-ahead are claimed ahead
-- only when what is due leaves room, as a plain claim's score order does
-- (a claim ahead in the middle of a backlog holds the slot's next claim
-- until it falls due)
local items, again = fair_take(limit, now)
-- what the first take returns is due: at now, in the order taken, so
-- only a claim ahead needs sorting
local ahead = false
if not again and #items / 2 < limit and horizon > now then
  local more
  more, again = fair_take(limit - #items / 2, horizon)
  for i = 1, #more do items[#items + 1] = more[i] end
  ahead = #more > 0
end
-- due members keep the order taken (round-robin among keys, due order
-- within a key); those claimed ahead follow by score
local order, at = {}, {}
for i = 1, #items, 2 do
  order[#order + 1] = i
  at[i] = math.max(fnum(items[i + 1]), now)
end
if ahead then
  table.sort(order, function(a, b)
    if at[a] ~= at[b] then return at[a] < at[b] end
    return a < b
  end)
end
local ms, ss, buried = {}, {}, 0
for _, i in ipairs(order) do
  local m, s = items[i], items[i + 1]
  if s == '-inf' then
    bury(m, 'due time -inf can never be honoured', envelopes and idof(m) or '', s)
    buried = buried + 1
  else
    ms[#ms + 1], ss[#ss + 1] = m, s
  end
end
out[4] = tostring(buried)
local ticks = {}
lease_claimed(ms, ss, deadline, out, ticks)
if again and #items / 2 < limit then
  -- the turns ran out on stale entries and moved keys before the batch
  -- was full: more is due, claim again at once (an empty next would nap
  -- the poll interval)
  out[2] = string.format('%.0f', math.floor(now))
elseif not again and #items / 2 < limit then
  out[2] = first_above(sched, horizon, within, zc(sched, horizon)) or ''
  -- a key over its rate waits in waiting for its next token
  local w = redis.call('ZRANGE', fwait, 0, 0, 'WITHSCORES')
  if w[2] and fnum(w[2]) > horizon and (out[2] == '' or fnum(w[2]) < fnum(out[2])) then
    out[2] = string.format('%.0f', math.ceil(fnum(w[2])))
  end
end
if #ticks > 0 then out[#out + 1] = table.concat(ticks, ',') end
return out
`)
