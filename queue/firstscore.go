package queue

import "time"

// firstScoreLua defines the helpers that learn a sorted set's lowest score
// from counts alone (ZCOUNT, O(log N)), never by reading a member: when a
// slot's head falls due, or when its next lease expires, costs the same for
// a 10 MB member as for a 10-byte one (docs/architecture.md, Message size).
// A member read through a script costs Redis its size every time (an 8 MiB
// member ~90 ms inside a script, ~30 ms for a client), and the claim, the
// reaper and stats ask every poll.
//
// Scores are found to the whole millisecond, rounded up: a scanner that
// sleeps until the answer is never early, and a fractional due time at
// most 1 ms late (beyond 2^53 ms, where doubles skip integers, within 2 ms;
// no front door accepts such a score, a raw ZADD may write one, and the
// halving stops rather than loop).
//
// first_above(key, lo, within, base): the lowest score of key above lo (an
// integer; base members are scored at or below it) when it is at most lo +
// within, rounded up; "inf" when key's lowest score above lo is +inf; nil
// when no member is above lo or the lowest is beyond lo + within. It gallops up from lo (1, 2, 4 … ms)
// then halves: about 2 log2(distance) ZCOUNTs, at most 2 log2(within) + 3.
//
// oldest_at(key, hi): the lowest score of key when one is at or below hi
// (an integer): "-inf" when a member is scored -inf, else that score
// rounded up, galloping down from hi; past firstScoreReach below hi it
// reads the head (a score no front door accepts).
const firstScoreLua = `
local function zc(key, x)
  return redis.call('ZCOUNT', key, '-inf', string.format('%.0f', x))
end
local function halve(key, lo, hi, base)
  while hi - lo > 1 do
    local mid = math.floor((lo + hi) / 2)
    -- past 2^53 not every integer is a double: stop where halving cannot
    -- move (hi is then within 2 ms above the score)
    if mid <= lo or mid >= hi then break end
    if zc(key, mid) > base then hi = mid else lo = mid end
  end
  return string.format('%.0f', hi)
end
local function first_above(key, lo, within, base)
  local hi = lo + within
  if zc(key, hi) == base then
    local infs = redis.call('ZCOUNT', key, '+inf', '+inf')
    if infs > 0 and infs + base == redis.call('ZCARD', key) then return 'inf' end
    return nil
  end
  local step = 1
  while lo + step < hi and zc(key, lo + step) == base do
    lo = lo + step
    step = step * 2
  end
  return halve(key, lo, math.min(lo + step, hi), base)
end
local function oldest_at(key, hi)
  if redis.call('ZCOUNT', key, '-inf', '-inf') > 0 then return '-inf' end
  local step, floor = 1, hi - ` + firstScoreReach + `
  while zc(key, hi - step) > 0 do
    hi = hi - step
    step = step * 2
    if hi - step < floor then
      local z = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
      return z[2]
    end
  end
  return halve(key, hi - step, hi, 0)
end
`

// firstScoreReach is how far below its bound oldest_at gallops (2^53 ms,
// the range of exact whole milliseconds): a lower score is read from the
// head.
const firstScoreReach = "9007199254740992"

// defaultNextWithin is how far past its look-ahead a claim looks for the
// scheduled set's next score when its caller does not say (ClaimOptions).
const defaultNextWithin = time.Hour
