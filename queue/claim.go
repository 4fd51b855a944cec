package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Claimed is one member taken by Claim.
type Claimed struct {
	Member string
	// Due is the time the producer asked for, in Unix milliseconds (a score
	// may carry a fraction).
	Due float64
	// Attempts is how many publishes of this member failed before.
	Attempts int
}

// DueTime is Due as a time.Time.
func (c Claimed) DueTime() time.Time { return MillisTime(c.Due) }

// Claim is the result of one claim call.
type Claim struct {
	// Now is Redis's TIME when the claim ran.
	Now time.Time
	// Next is the lowest score left in the scheduled set, valid when HasNext.
	Next    float64
	HasNext bool
	// Paused reports that the topic is paused (see Pause): nothing was
	// claimed and HasNext is false, so a scanner sleeps its poll interval.
	Paused bool
	// Dead counts the members dead-lettered instead of claimed: a score of
	// -inf can never be honoured.
	Dead int
	// Messages are in score order.
	Messages []Claimed
}

// claimChunk is how many claimed members one HMGET/HSET/ZADD carries. A claim
// of hundreds must cost a few variadic commands, not one per member, yet
// unpack() of a whole batch could pass Lua's C stack limit (about 8000
// values), so the batch goes in chunks well below it.
const claimChunk = 256

// claimScript moves due members to the in-flight set.
//
// KEYS    -> slotKeys
// ARGV[1] -> most members to claim
// ARGV[2] -> lease, ms
// ARGV[3] -> "1" when the topic's members are envelopes
//
// Returns {now, next, paused, dead, m1, due1, attempts1, m2, …}: now is Redis's time (ms,
// with its microseconds as a fraction, so the scanner can sleep until the
// next due time to the microsecond), next is the lowest score left in the
// scheduled set ("" when empty), due is the original due time (kept from the
// first claim through retries and reaps), attempts the failed attempts so
// far, paused "1" when the slot's paused key exists: then nothing is claimed
// and next is "" (a paused slot must be looked at again within the poll
// interval, never at an overdue score, which would spin). A score of -inf
// can never be honoured: such a member goes to the dead set instead (and,
// for an envelope, leaves the ids index); dead counts them. Claiming leaves
// the ids index alone: an id keeps naming its member while it is in flight.
//
// When nothing is due it only reads the first score: an idle slot costs one
// command besides TIME. Otherwise the records of the claimed members are read
// and written with one variadic command per chunk (claimChunk).
var claimScript = slotScript(nowLua, idsLua, buryLua, fmt.Sprintf("local chunk = %d\n", claimChunk), `
local out = {string.format('%.3f', tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000), '', '0', '0'}
if redis.call('HLEN', paused) > 0 then
  out[3] = '1'
  return out
end
local head = redis.call('ZRANGE', sched, 0, 0, 'WITHSCORES')
if not head[2] or tonumber(head[2]) > now then
  if head[2] then out[2] = head[2] end
  return out
end
local limit = tonumber(ARGV[1])
local deadline = now + tonumber(ARGV[2])
local envelopes = ARGV[3] == '1'
local items = redis.call('ZRANGEBYSCORE', sched, '-inf', string.format('%.0f', now), 'WITHSCORES', 'LIMIT', 0, limit)
local n = #items / 2
if n > 0 then
  redis.call('ZREMRANGEBYRANK', sched, 0, n - 1)
  local failed = redis.call('HLEN', attempts) > 0
  local ms, ss, buried = {}, {}, 0
  for i = 1, #items, 2 do
    local m, s = items[i], items[i + 1]
    if s == '-inf' then
      bury(m, 'due time -inf can never be honoured', envelopes and idof(m) or '')
      buried = buried + 1
    else
      ms[#ms + 1], ss[#ss + 1] = m, s
    end
  end
  out[4] = tostring(buried)
  for c = 1, #ms, chunk do
    local last = math.min(c + chunk - 1, #ms)
    local part = {unpack(ms, c, last)}
    local known = redis.call('HMGET', dues, unpack(part))
    local atts = failed and redis.call('HMGET', attempts, unpack(part)) or {}
    local record, lease = {}, {}
    for j = 1, #part do
      local m, due = part[j], known[j]
      if not due then
        due = ss[c + j - 1]
        record[#record + 1] = m
        record[#record + 1] = due
      end
      lease[#lease + 1] = deadline
      lease[#lease + 1] = m
      out[#out + 1] = m
      out[#out + 1] = due
      out[#out + 1] = atts[j] or '0'
    end
    if #record > 0 then redis.call('HSET', dues, unpack(record)) end
    redis.call('ZADD', inflight, unpack(lease))
  end
end
local nxt = redis.call('ZRANGE', sched, 0, 0, 'WITHSCORES')
if nxt[2] then out[2] = nxt[2] end
return out
`)

// claimHeader is the number of elements before the first member of
// claimScript's reply: now, next, paused, dead.
const claimHeader = 4

// Claim moves up to limit due members of one slot to the in-flight set with a
// lease, in score order.
func (q *Queue) Claim(ctx context.Context, t Topic, slot, limit int, lease time.Duration) (Claim, error) {
	k := t.Keys(slot)
	res, err := claimScript.Run(ctx, q.rdb, slotKeys(k),
		limit, lease.Milliseconds(), flag(t.envelope())).StringSlice()
	if err != nil {
		return Claim{}, fmt.Errorf("claim %s: %w", k.Scheduled, err)
	}
	if len(res) < claimHeader || (len(res)-claimHeader)%3 != 0 {
		return Claim{}, fmt.Errorf("claim %s: malformed reply of %d elements", k.Scheduled, len(res))
	}
	now, err := strconv.ParseFloat(res[0], 64)
	if err != nil {
		return Claim{}, fmt.Errorf("claim %s: parse now %q: %w", k.Scheduled, res[0], err)
	}
	c := Claim{Now: MillisTime(now), Paused: res[2] == "1"}
	if c.Dead, err = strconv.Atoi(res[3]); err != nil {
		return Claim{}, fmt.Errorf("claim %s: parse dead %q: %w", k.Scheduled, res[3], err)
	}
	if res[1] != "" {
		if c.Next, err = strconv.ParseFloat(res[1], 64); err != nil {
			return Claim{}, fmt.Errorf("claim %s: parse next %q: %w", k.Scheduled, res[1], err)
		}
		c.HasNext = true
	}
	if n := (len(res) - claimHeader) / 3; n > 0 {
		c.Messages = make([]Claimed, n)
	}
	for i := range c.Messages {
		j := claimHeader + 3*i
		due, err := strconv.ParseFloat(res[j+1], 64)
		if err != nil {
			return Claim{}, fmt.Errorf("claim %s: parse due %q: %w", k.Scheduled, res[j+1], err)
		}
		att, err := strconv.Atoi(res[j+2])
		if err != nil {
			return Claim{}, fmt.Errorf("claim %s: parse attempts %q: %w", k.Scheduled, res[j+2], err)
		}
		c.Messages[i] = Claimed{Member: res[j], Due: due, Attempts: att}
	}
	return c, nil
}
