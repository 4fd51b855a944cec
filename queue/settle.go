package queue

import (
	"context"
	"fmt"
	"time"
)

// Settling ends a claim: Ack when the broker confirmed, Retry when it refused
// this message, Release when the message was not at fault (the sink lost its
// connection, or the daemon is shutting down).

// ackChunk is how many acked members one ZMSCORE/ZREM/HDEL carries: one
// variadic command per chunk, not one per member, while unpack() stays well
// below Lua's C stack limit (about 8000 values).
const ackChunk = 256

// ackScript forgets members the broker confirmed.
//
// KEYS -> slotKeys
// ARGV -> member1, id1, bucket1, member2, id2, bucket2, … (id "" for raw
// members; bucket: the index bucket of a canonical envelope's id, else "")
//
// Returns how many were still in flight. A member no longer in flight (its
// lease expired and it was reaped, or the producer replaced it) is left
// alone. Only a member that failed before has attempts and a last error
// (reasons) to forget: both go, unless the same bytes are also dead. An
// acked envelope leaves the id index (see unmap_held: one HDEL per bucket,
// and the ids HASH only when it exists) unless its member was scheduled
// again meanwhile. Members are looked up and forgotten in chunks of
// ackChunk.
var ackScript = slotScript(idsLua, fmt.Sprintf("local chunk = %d\n", ackChunk), `
local n = 0
local failed = redis.call('HLEN', attempts) > 0
local seen = {}
local legacy = redis.call('EXISTS', ids) == 1
for c = 1, #ARGV, 3 * chunk do
  local ms, mids, mbs = {}, {}, {}
  for i = c, math.min(c + 3 * chunk - 3, #ARGV - 2), 3 do
    if not seen[ARGV[i]] then
      seen[ARGV[i]] = true
      ms[#ms + 1], mids[#mids + 1], mbs[#mbs + 1] = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    end
  end
  if #ms > 0 then
    local scores = redis.call('ZMSCORE', inflight, unpack(ms))
    local held, heldIDs, heldBuckets = {}, {}, {}
    for j = 1, #ms do
      if scores[j] then
        held[#held + 1], heldIDs[#heldIDs + 1], heldBuckets[#heldBuckets + 1] = ms[j], mids[j], mbs[j]
      end
    end
    if #held > 0 then
      redis.call('ZREM', inflight, unpack(held))
      redis.call('HDEL', dues, unpack(held))
      if failed then
        redis.call('HDEL', attempts, unpack(held))
        local died, drop = redis.call('ZMSCORE', dead, unpack(held)), {}
        for j = 1, #held do
          if not died[j] then drop[#drop + 1] = held[j] end
        end
        if #drop > 0 then redis.call('HDEL', reasons, unpack(drop)) end
      end
      local again = redis.call('ZMSCORE', sched, unpack(held))
      local keys, drop = {}, {}
      for j = 1, #held do
        local m, id, b = held[j], heldIDs[j], heldBuckets[j]
        if id == '' then
        elseif again[j] then
          moved(m, id, again[j])
        else
          if legacy and redis.call('HGET', ids, id) == m then redis.call('HDEL', ids, id) end
          if b ~= '' then
            local key = idx .. ':' .. b
            if not drop[key] then keys[#keys + 1], drop[key] = key, {} end
            table.insert(drop[key], id)
          end
        end
      end
      for _, key in ipairs(keys) do redis.call('HDEL', key, unpack(drop[key])) end
      n = n + #held
    end
  end
end
return n
`)

// Ack forgets members the broker confirmed and returns how many were still in
// flight. On envelope topics their ids leave the ids index.
func (q *Queue) Ack(ctx context.Context, t Topic, slot int, members []string) (int, error) {
	if len(members) == 0 {
		return 0, nil
	}
	k := t.Keys(slot)
	args := make([]any, 0, 3*len(members))
	for _, m := range members {
		id, bucket := t.indexRef(m)
		args = append(args, m, id, bucket)
	}
	n, err := ackScript.Run(ctx, q.rdb, slotKeys(k), args...).Int()
	if err != nil {
		return 0, fmt.Errorf("ack %d in %s: %w", len(members), k.Inflight, err)
	}
	return n, nil
}

// releaseScript returns claimed members without counting an attempt.
//
// KEYS     -> slotKeys
// ARGV[1]  -> "1" when the topic's members are envelopes
// ARGV[2…] -> members
//
// Each goes back at its original due time, so slot order is kept, and an
// envelope's index entry follows it. Returns how many were still in flight.
var releaseScript = slotScript(nowLua, idsLua, `
local n = 0
local envelopes = ARGV[1] == '1'
for i = 2, #ARGV do
  local m = ARGV[i]
  if redis.call('ZREM', inflight, m) == 1 then
    local due = redis.call('HGET', dues, m) or string.format('%.0f', now)
    redis.call('ZADD', sched, 'NX', due, m)
    if envelopes then moved(m, fastid(m), redis.call('ZSCORE', sched, m)) end
    n = n + 1
  end
end
return n
`)

// Release returns claimed members to the scheduled set at their original due
// time without counting an attempt, and returns how many were still in flight.
func (q *Queue) Release(ctx context.Context, t Topic, slot int, members []string) (int, error) {
	if len(members) == 0 {
		return 0, nil
	}
	k := t.Keys(slot)
	args := append([]any{flag(t.envelope())}, toArgs(members)...)
	n, err := releaseScript.Run(ctx, q.rdb, slotKeys(k), args...).Int()
	if err != nil {
		return 0, fmt.Errorf("release %d in %s: %w", len(members), k.Inflight, err)
	}
	return n, nil
}

// Outcome is what Retry did with a member.
type Outcome int

const (
	// NotInflight: the member was no longer in flight; nothing changed.
	NotInflight Outcome = iota
	// Retrying: the member waits in the scheduled set for another attempt.
	Retrying
	// Dead: the member was moved to the dead set with the reason.
	Dead
)

func (o Outcome) String() string {
	switch o {
	case Retrying:
		return "retrying"
	case Dead:
		return "dead"
	default:
		return "not-inflight"
	}
}

// Failure describes one failed publish for Retry.
type Failure struct {
	Member string
	// Backoff is how long to wait before the next attempt.
	Backoff time.Duration
	// Permanent failures dead-letter at once.
	Permanent bool
	// Reason is kept as the member's last error in the reason hash (shown
	// for a retrying message, and the dead set's reason once it dies).
	Reason string
}

// retryScript records a failed publish of one member.
//
// KEYS    -> slotKeys
// ARGV[1] -> member
// ARGV[2] -> back-off before the next attempt, ms
// ARGV[3] -> max attempts
// ARGV[4] -> "1" when the failure is permanent (dead-letter at once)
// ARGV[5] -> error text
// ARGV[6] -> the member's envelope id ("" for raw or undecodable members)
//
// Returns -1 when the member is not in flight (someone else handled it: no
// change), 0 when it was dead-lettered, else the attempts so far. A member the
// producer rescheduled meanwhile keeps the producer's score. The error text
// is kept as the member's last error (reasons) either way, so ls and get show
// why a retrying message failed. A dead-lettered
// envelope leaves the ids index; one waiting to retry keeps its id.
var retryScript = slotScript(nowLua, idsLua, buryLua, `
local m = ARGV[1]
if not redis.call('ZSCORE', inflight, m) then return -1 end
redis.call('ZREM', inflight, m)
local n = redis.call('HINCRBY', attempts, m, 1)
if ARGV[4] == '1' or n >= tonumber(ARGV[3]) then
  bury(m, ARGV[5], ARGV[6], nil)
  return 0
end
redis.call('HSET', reasons, m, ARGV[5])
redis.call('ZADD', sched, 'NX', now + tonumber(ARGV[2]), m)
moved(m, ARGV[6], redis.call('ZSCORE', sched, m))
return n
`)

// Retry counts a failed attempt of a member still in flight: below
// maxAttempts it goes back to the scheduled set after the back-off, else (or
// when permanent) to the dead set with the reason.
func (q *Queue) Retry(ctx context.Context, t Topic, slot int, f Failure, maxAttempts int) (Outcome, error) {
	k := t.Keys(slot)
	n, err := retryScript.Run(ctx, q.rdb, slotKeys(k),
		f.Member, f.Backoff.Milliseconds(), maxAttempts, flag(f.Permanent), f.Reason, t.unmapID(f.Member)).Int()
	if err != nil {
		return NotInflight, fmt.Errorf("retry in %s: %w", k.Inflight, err)
	}
	switch {
	case n < 0:
		return NotInflight, nil
	case n == 0:
		return Dead, nil
	default:
		return Retrying, nil
	}
}
