package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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
// KEYS    -> slotKeys
// ARGV[1] -> the topic's dedup window, ms ("0": remember nothing)
// ARGV[2…] -> member1, id1, bucket1, member2, id2, bucket2, … (id "" for raw
// members; bucket: the index bucket of a canonical envelope's id, else "")
//
// Returns how many were still in flight. A member no longer in flight (its
// lease expired and it was reaped, or the producer replaced it) is left
// alone. Only a member that failed before has attempts and a last error
// (reasons) to forget: both go, unless the same bytes are also dead. An
// acked envelope leaves the id index (see unmap_held: one HDEL per bucket,
// and the ids HASH only when it exists) unless its member was scheduled
// again meanwhile. Members are looked up and forgotten in chunks of
// ackChunk. With a window, the ids that left the index are remembered in
// the delivered set until now + window (remember in dedupLua), so that a
// schedule of one of them meanwhile is a duplicate.
var ackScript = drainScript(idsLua, fmt.Sprintf("local chunk = %d\n", ackChunk), dedupLua, `
local n = 0
local failed = redis.call('HLEN', attempts) > 0
local seen = {}
local legacy = redis.call('EXISTS', ids) == 1
local window, known = tonumber(ARGV[1]) or 0, {}
for c = 2, #ARGV, 3 * chunk do
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
          if window > 0 then known[#known + 1] = id end
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
remember(known, window)
return n
`)

// Ack forgets members the broker confirmed and returns how many were still in
// flight. On envelope topics their ids leave the ids index.
func (q *Queue) Ack(ctx context.Context, t Topic, slot int, members []string) (int, error) {
	return q.AckIDs(ctx, t, slot, members, nil)
}

// AckIDs is Ack for a caller that decoded the members already: ids[i] is the
// envelope id of members[i] (nil, or "" for one member, when the caller does
// not know it: AckIDs reads it from the member), so the ack path does not
// parse an envelope twice.
//
// On an envelope topic with a DedupWindow the ids acked stay known for that
// window (see Receipt.Duplicate).
func (q *Queue) AckIDs(ctx context.Context, t Topic, slot int, members, ids []string) (int, error) {
	if len(members) == 0 {
		return 0, nil
	}
	k := t.Keys(slot)
	args := make([]any, 0, 1+3*len(members))
	args = append(args, t.dedupMillis())
	for i, m := range members {
		id, bucket := t.settleRef(ids, i, m)
		args = append(args, m, id, bucket)
	}
	n, err := ackScript.Run(ctx, q.rdb, slotKeys(k), args...).Int()
	if err != nil {
		return 0, fmt.Errorf("ack %d in %s: %w", len(members), k.Inflight, err)
	}
	return n, nil
}

// settleRef is the id and index bucket Ack passes for member, the ith of a
// settled group: ids[i] when the caller decoded it, with its bucket when the
// member is canonical (as indexRef, without parsing the member again); else
// what indexRef reads from the member.
func (t Topic) settleRef(ids []string, i int, member string) (id, bucket string) {
	if !t.envelope() || i >= len(ids) || ids[i] == "" {
		return t.indexRef(member)
	}
	id = ids[i]
	if !strings.ContainsAny(id, `"\`) && strings.HasPrefix(member, `{"id":"`+id+`"`) {
		return id, strconv.Itoa(idBucket(id))
	}
	return id, ""
}

// releaseScript returns claimed members without counting an attempt.
//
// KEYS     -> slotKeys
// ARGV[1]  -> "1" when the topic's members are envelopes
// ARGV[2…] -> members
//
// Each goes back at its original due time, so slot order is kept, and an
// envelope's index entry follows it. Returns how many were still in flight.
var releaseScript = drainScript(nowLua, idsLua, `
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
	if err := q.fairIndex(ctx, t, slot, members); err != nil {
		return n, fmt.Errorf("release: %w", err)
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
	// ID is the member's envelope id when the caller decoded it; "" lets
	// Retry read it from the member (raw members have none).
	ID string
	// Backoff is how long to wait before the next attempt.
	Backoff time.Duration
	// Permanent failures dead-letter at once.
	Permanent bool
	// Reason is kept as the member's last error in the reason hash (shown
	// for a retrying message, and the dead set's reason once it dies).
	Reason string
}

// retryArgs is how many ARGV one failure takes in retryScript.
const retryArgs = 5

// retryScript records the failed publishes of a group of members, in order.
//
// KEYS    -> slotKeys
// ARGV[1] -> max attempts
// then per member, retryArgs values:
// ARGV[i]   -> member
// ARGV[i+1] -> back-off before the next attempt, ms
// ARGV[i+2] -> "1" when the failure is permanent (dead-letter at once)
// ARGV[i+3] -> error text
// ARGV[i+4] -> the member's envelope id ("" for raw or undecodable members)
//
// Returns, per member, -1 when it is not in flight (someone else handled it:
// no change), 0 when it was dead-lettered, else the attempts so far. A member
// the producer rescheduled meanwhile keeps the producer's score. The error
// text is kept as the member's last error (reasons) either way, so ls and get
// show why a retrying message failed. A dead-lettered envelope leaves the ids
// index; one waiting to retry keeps its id.
var retryScript = drainScript(nowLua, idsLua, buryLua, fmt.Sprintf("local step = %d\n", retryArgs), `
local max = tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV, step do
  local m = ARGV[i]
  if not redis.call('ZSCORE', inflight, m) then
    out[#out + 1] = -1
  else
    redis.call('ZREM', inflight, m)
    local n = redis.call('HINCRBY', attempts, m, 1)
    if ARGV[i + 2] == '1' or n >= max then
      bury(m, ARGV[i + 3], ARGV[i + 4], nil)
      out[#out + 1] = 0
    else
      redis.call('HSET', reasons, m, ARGV[i + 3])
      redis.call('ZADD', sched, 'NX', now + tonumber(ARGV[i + 1]), m)
      moved(m, ARGV[i + 4], redis.call('ZSCORE', sched, m))
      out[#out + 1] = n
    end
  end
end
return out
`)

// Retry counts a failed attempt of a member still in flight: below
// maxAttempts it goes back to the scheduled set after the back-off, else (or
// when permanent) to the dead set with the reason.
func (q *Queue) Retry(ctx context.Context, t Topic, slot int, f Failure, maxAttempts int) (Outcome, error) {
	out, err := q.RetryAll(ctx, t, slot, []Failure{f}, maxAttempts)
	if err != nil {
		return NotInflight, err
	}
	return out[0], nil
}

// RetryAll is Retry of every failure in one call (one script, one round
// trip): out[i] is what became of fs[i], in the order given.
func (q *Queue) RetryAll(ctx context.Context, t Topic, slot int, fs []Failure, maxAttempts int) ([]Outcome, error) {
	if len(fs) == 0 {
		return nil, nil
	}
	k := t.Keys(slot)
	args := make([]any, 0, 1+retryArgs*len(fs))
	args = append(args, maxAttempts)
	for _, f := range fs {
		id := f.ID
		if id == "" {
			id = t.unmapID(f.Member)
		}
		args = append(args, f.Member, f.Backoff.Milliseconds(), flag(f.Permanent), f.Reason, id)
	}
	ns, err := retryScript.Run(ctx, q.rdb, slotKeys(k), args...).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("retry %d in %s: %w", len(fs), k.Inflight, err)
	}
	if len(ns) != len(fs) {
		return nil, fmt.Errorf("retry %d in %s: script answered %d outcomes", len(fs), k.Inflight, len(ns))
	}
	out := make([]Outcome, len(ns))
	var back []string
	for i, n := range ns {
		switch {
		case n < 0:
			out[i] = NotInflight
		case n == 0:
			out[i] = Dead
		default:
			out[i] = Retrying
			back = append(back, fs[i].Member)
		}
	}
	if err := q.fairIndex(ctx, t, slot, back); err != nil {
		return out, fmt.Errorf("retry: %w", err)
	}
	return out, nil
}
