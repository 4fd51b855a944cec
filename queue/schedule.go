package queue

import (
	"context"
	"fmt"
	"strconv"
)

// The producer scripts keep the :ids index of envelope topics in step with
// the sets; on raw topics they get "" for the id and leave the index alone.
// Each one that writes a due time also publishes a wake-up (see WakeChannel)
// in the same call, so a scanner sleeping until a later message looks again.

// scoreLua defines score_of(mode, value), the score (a string) of a due time:
// "at" takes the score as given, "in" adds a delay to Redis's TIME, rounded
// up to the next millisecond when the delay is not zero: "now" is TIME
// rounded down, and a delay counted from it would fall due up to a
// millisecond before the delay had passed. A score
// past 2^53 ms cannot be held exactly, one before 1970 cannot be honoured:
// both return nil and the bad score. wake(channel, prefix, score) publishes a
// wake-up unless channel is "". Needs nowLua.
const scoreLua = `
local function score_of(mode, value)
  if mode == 'in' then
    local d = tonumber(value)
    local s = now + d
    if d > 0 and tonumber(t[2]) % 1000 > 0 then s = s + 1 end
    if s < 0 or s > 9007199254740992 then
      return nil, string.format('%.0f', s)
    end
    return string.format('%.0f', s)
  end
  return value
end
local function wake(channel, prefix, score)
  if channel ~= '' then redis.call('PUBLISH', channel, prefix .. score) end
end
`

// putLua defines put(m, id, score): schedule member m at score (a string)
// and return what it replaced. A raw member (id "") is a plain ZADD
// (replaced 1 when it was already scheduled; a copy in flight proceeds, as
// with any ZADD). An envelope replaces whatever its id named: a scheduled
// member is removed (replaced 1); a member in flight leaves the in-flight
// set (replaced 2), so its delivery proceeds but is never retried, reaped or
// released, and the new member is the only one the id names. Either way the
// new member starts fresh: no attempts, due at its own score. The id's
// entry moves to the index (see idsLua). An id the delivered set still
// knows (a later "until" than now: see ackScript) is a duplicate: nothing is
// written and put returns 3; an entry whose time has passed is dropped as
// the id is scheduled. With dedup "1" (a topic with a dedup window), an id
// in flight (claimed, published or waiting for its ack) is a duplicate as
// well: it is being delivered, and a retry of it is that one delivery.
// Needs nowLua, forgetLua and idsLua.
const putLua = `
local function put(m, id, score, dedup)
  local replaced = 0
  if id == '' then
    if redis.call('ZSCORE', sched, m) then replaced = 1 end
  else
    local known = redis.call('ZSCORE', deliv, id)
    if known then
      if tonumber(known) > now then return 3 end
      redis.call('ZREM', deliv, id)
    end
    local olds = lookup(id)
    if dedup == '1' then
      for _, old in ipairs(olds) do
        if redis.call('ZSCORE', inflight, old) then return 3 end
      end
    end
    for _, old in ipairs(olds) do
      if redis.call('ZREM', sched, old) == 1 and replaced == 0 then replaced = 1 end
      if redis.call('ZREM', inflight, old) == 1 then replaced = 2 end
      forget(old)
    end
    if redis.call('ZREM', sched, m) == 1 then
      forget(m)
    end
    index(m, id, score)
  end
  redis.call('ZADD', sched, score, m)
  return replaced
end
`

// scheduleScript schedules one member (see putLua).
//
// KEYS    -> slotKeys
// ARGV[1] -> member
// ARGV[2] -> envelope id ("" for a raw member)
// ARGV[3] -> "at" or "in"
// ARGV[4] -> score (ms) for "at", delay (ms) from Redis's TIME for "in"
// ARGV[5] -> wake channel ("" publishes nothing)
// ARGV[6] -> wake payload before the score ("<topic>\n<slot>\n")
// ARGV[7] -> "1": the topic has a dedup window (an id in flight is a duplicate)
//
// Returns {score, replaced}; replaced is 3 for a duplicate (nothing
// written).
var scheduleScript = growScript(nowLua, scoreLua, idsLua, forgetLua, putLua, `
local score, bad = score_of(ARGV[3], ARGV[4])
if not score then
  return redis.error_reply('ERR due time ' .. bad .. ' ms cannot be honoured')
end
local replaced = put(ARGV[1], ARGV[2], score, ARGV[7])
if replaced ~= 3 then wake(ARGV[5], ARGV[6], score) end
return {score, replaced}
`)

// Schedule schedules m on t, due when says. On a raw topic m carries only a
// Body (the member); on an envelope topic m.ID is required and scheduling an
// id that exists replaces that message (idempotent producers).
func (q *Queue) Schedule(ctx context.Context, t Topic, m Message, when When) (Receipt, error) {
	if err := t.checkSize(len(m.Body)); err != nil {
		return Receipt{}, fmt.Errorf("schedule: %w", err)
	}
	if t.envelope() {
		m = withTrace(ctx, m)
	}
	member, err := t.Encode(m)
	if err != nil {
		return Receipt{}, fmt.Errorf("schedule: %w", err)
	}
	return q.scheduleMember(ctx, t, member, when)
}

// ScheduleMember adds a member as is to its slot of t, due when says.
// Scheduling a raw member that is already scheduled moves it to the new time
// (members are unique: the same bytes are one message). On an envelope topic
// the member must be a valid envelope, and it replaces the message its id
// names. A body over t.MaxMessageSize is refused (ErrTooLarge).
func (q *Queue) ScheduleMember(ctx context.Context, t Topic, member []byte, when When) (Receipt, error) {
	if err := t.checkMemberSize(member); err != nil {
		return Receipt{}, fmt.Errorf("schedule: %w", err)
	}
	return q.scheduleMember(ctx, t, member, when)
}

// scheduleMember is ScheduleMember once the body's size was checked.
func (q *Queue) scheduleMember(ctx context.Context, t Topic, member []byte, when When) (Receipt, error) {
	c, r, err := t.scheduleCall(member, when)
	if err != nil {
		return Receipt{}, err
	}
	if err := q.checkLayout(ctx, t); err != nil {
		return Receipt{}, fmt.Errorf("schedule: %w", err)
	}
	cmd, confirm := q.runConfirmed(ctx, scheduleScript, c.keys, c.args...)
	res, err := cmd.Slice()
	if err != nil {
		return Receipt{}, fmt.Errorf("schedule in %s: %w", t.Keys(r.Slot).Scheduled, dueErr(err))
	}
	if err := r.fill(res); err != nil {
		return Receipt{}, err
	}
	if !r.Duplicate {
		if err := q.fairIndex(ctx, t, r.Slot, []string{r.Member}); err != nil {
			return r, fmt.Errorf("schedule: %w", err)
		}
	}
	if confirm != nil {
		// Written, not confirmed: the receipt says what was written.
		return r, fmt.Errorf("schedule in %s: %w", t.Keys(r.Slot).Scheduled, confirm)
	}
	return r, nil
}

// scheduleCall validates a member and builds its schedule script call.
func (t Topic) scheduleCall(member []byte, when When) (scriptCall, Receipt, error) {
	slot, id, err := t.Locate(member)
	if err == nil && t.envelope() {
		err = checkOwnID(id, false)
	}
	if err != nil {
		return scriptCall{}, Receipt{}, fmt.Errorf("schedule: %w", err)
	}
	mode, value, err := when.args()
	if err != nil {
		return scriptCall{}, Receipt{}, fmt.Errorf("schedule in %s: %w", t.Name, err)
	}
	channel, prefix := t.wakeArgs(slot)
	envID := ""
	if t.envelope() {
		envID = id
	}
	c := scriptCall{
		keys: slotKeys(t.Keys(slot)),
		args: []any{member, envID, mode, value, channel, prefix, flag(t.dedupMillis() > 0)},
	}
	return c, Receipt{Topic: t.Name, Slot: slot, ID: id, Member: string(member)}, nil
}

// dupReply is what putLua returns for a duplicate: an id delivered within
// its topic's dedup window.
const dupReply = 3

// fill reads the schedule script's reply {score, replaced}.
func (r *Receipt) fill(res []any) error {
	if len(res) != 2 {
		return fmt.Errorf("schedule in %s: malformed reply of %d elements", r.Topic, len(res))
	}
	s, _ := res[0].(string)
	score, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("schedule in %s: parse score %q: %w", r.Topic, s, err)
	}
	n, _ := res[1].(int64)
	r.Score = score
	if n == dupReply {
		r.Duplicate = true
	} else {
		r.Replaced = Replaced(n)
	}
	return nil
}
