package queue

// Fair share (Topic.Fair): among the due messages of a slot, each key
// (Message.Key) gets its turn. The slot's scheduled set stays what it is,
// the truth about what is scheduled and when; beside it four keys of fixed
// names (SlotKeys.FairHeads, FairWaiting, FairReady, FairCount, the last
// four of slotKeys) say which key goes next:
//
//   - heads, a ZSET whose scores are all 0, ordered by its entries' bytes:
//     "<key>\0<due, 8 bytes that sort as the score does><member>", one per
//     scheduled member. ZRANGEBYLEX from "<key>\0" finds a key's earliest
//     messages in due order.
//   - waiting, key → the due time of its head, for keys whose head is not
//     due yet.
//   - ready, key → its turn (a sequence: the lowest goes next), for keys
//     whose head is due.
//   - count, key → how many entries it has in heads (stats --keys).
//
// A key is in them only while it has scheduled messages. A claim moves the
// keys whose head fell due from waiting to the tail of ready (at most as
// many as the claim's limit), then serves ready keys from the head, each
// its share of what the claim may still take (at least one message), and
// puts a key it served back at the tail when its next head is due, in
// waiting when it is not, nowhere when it has none. Every step is bounded
// by the claim's limit: one claim is one script call whose cost grows with
// the messages it takes, never with the number of keys.
//
// The heads are an index, checked against the scheduled set at every claim:
// an entry whose member left the set (cancelled, replaced) is dropped when
// its key's turn reaches it, one whose member moved (a plain ZADD) is
// indexed again at its real score, and a member no entry names (written by
// hand, or by a producer that died between its two calls) is indexed when
// it is the scheduled set's head and due. So a fair topic never loses a
// message to its index and never delivers one early: the score decides.

import (
	"context"
	"fmt"
)

// fairLua defines the helpers of the fair state (needs slotLua):
// fkey(m), the key of member m ("" for none: a member that is not an
// envelope; a recurrence's tick has its envelope's key); fentry(k, s, m), m's entry in heads at score s;
// fair_add(m, s), index m scheduled at s and place its key; fair_dec(k, n),
// count n entries of k gone, dropping k's state at 0; ftail(), the turn
// after the last of ready.
const fairLua = `
local function fnum(s)
  if s == '-inf' then return -math.huge end
  if s == 'inf' or s == '+inf' then return math.huge end
  return tonumber(s)
end
local function fkey(m)
  local env = string.match(m, '^%zrecur%z[^%z]*%z[^%z]*%z[^%z]*%z[^%z]*%z(.*)$')
  if env then m = env end
  local k = string.match(m, '^{"id":"[^"\\]*","key":"([^"\\]*)"')
  if k then return k end
  local e = string.match(m, '^{"id":"[^"\\]*"()')
  if e and string.sub(m, e, e + 6) ~= ',"key":' then return '' end
  if string.sub(m, 1, 1) ~= '{' then return '' end
  local ok, v = pcall(cjson.decode, m)
  if ok and type(v) == 'table' and type(v['key']) == 'string' then return v['key'] end
  return ''
end
local function ford(s)
  local n = fnum(s) + 0
  local b = {string.byte(struct.pack('>d', n), 1, 8)}
  if n >= 0 then
    b[1] = b[1] + 128
  else
    for i = 1, 8 do b[i] = 255 - b[i] end
  end
  return string.char(unpack(b))
end
local function fentry(k, s, m)
  return k .. '\0' .. ford(s) .. m
end
local function ftail()
  local z = redis.call('ZRANGE', fready, -1, -1, 'WITHSCORES')
  if z[2] then return tonumber(z[2]) + 1 end
  return 1
end
local function fair_dec(k, n)
  if n == 0 then return end
  if tonumber(redis.call('ZINCRBY', fcount, -n, k)) <= 0 then
    redis.call('ZREM', fcount, k)
    redis.call('ZREM', fready, k)
    redis.call('ZREM', fwait, k)
    redis.call('HDEL', flimits, 'b:' .. k)
  end
end
local function fair_add(m, s)
  local k = fkey(m)
  if redis.call('ZADD', fheads, 0, fentry(k, s, m)) == 1 then
    redis.call('ZINCRBY', fcount, 1, k)
  end
  if redis.call('ZSCORE', fready, k) then return end
  local w = redis.call('ZSCORE', fwait, k)
  if not w or fnum(s) < fnum(w) then redis.call('ZADD', fwait, s, k) end
end
`

// fairIndexScript indexes members of a fair topic that are in the
// scheduled set (see fair_add); a member that is not is left alone (a claim
// took it meanwhile). The calls that put members in the scheduled set run
// it after them on fair topics (see fairIndex).
//
// KEYS    -> slotKeys
// ARGV    -> members
//
// Returns how many were indexed.
var fairIndexScript = drainScript(fairLua, `
local n = 0
for i = 1, #ARGV do
  local s = redis.call('ZSCORE', sched, ARGV[i])
  if s then
    fair_add(ARGV[i], s)
    n = n + 1
  end
end
return n
`)

// fairRecurScript indexes the waiting tick of each recurrence named (see
// fairIndexScript): the calls that write a tick (SetRecurrence,
// SettleTicksAt) run it after them on fair topics.
//
// KEYS    -> slotKeys
// ARGV    -> recurrence ids
var fairRecurScript = drainScript(recurLua, fairLua, `
for i = 1, #ARGV do
  local v = redis.call('HGET', recur, ARGV[i])
  local ver, nxt, _, rest
  if v then ver, nxt, _, rest = parse_recur(v) end
  if ver and nxt ~= '' then
    local m = tick_member(ver, nxt, rest)
    local s = redis.call('ZSCORE', sched, m)
    if s then fair_add(m, s) end
  end
end
return 0
`)

// fairIndexRecur indexes the waiting ticks of recurrences ids of slot when
// t is fair (fairRecurScript).
func (q *Queue) fairIndexRecur(ctx context.Context, t Topic, slot int, ids []string) error {
	if !t.Fair || len(ids) == 0 {
		return nil
	}
	k := t.Keys(slot)
	if err := fairRecurScript.Run(ctx, q.rdb, slotKeys(k), toArgs(ids)...).Err(); err != nil {
		return fmt.Errorf("fair index ticks in %s: %w", k.Recur, err)
	}
	return nil
}

// fairIndexChunk is how many members one fairIndexScript call carries.
const fairIndexChunk = 512

// fairIndex indexes members just put in slot's scheduled set of t when t is
// fair (fairIndexScript); on another topic it does nothing. A failure here
// loses nothing: the claim indexes a scheduled set's due head that no entry
// names (see the comment at the top of this file).
func (q *Queue) fairIndex(ctx context.Context, t Topic, slot int, members []string) error {
	if !t.Fair || len(members) == 0 {
		return nil
	}
	k := t.Keys(slot)
	for len(members) > 0 {
		n := min(len(members), fairIndexChunk)
		if err := fairIndexScript.Run(ctx, q.rdb, slotKeys(k), toArgs(members[:n])...).Err(); err != nil {
			return fmt.Errorf("fair index %d in %s: %w", n, k.Scheduled, err)
		}
		members = members[n:]
	}
	return nil
}

// fairIndexBatch is fairIndex of the items of a batch that were written,
// slot by slot; an item of a slot whose index call failed gets the error
// (scheduling it again is safe).
func (q *Queue) fairIndexBatch(ctx context.Context, t Topic, receipts []Receipt, errs []error) {
	bySlot := map[int][]int{}
	var slots []int
	for i, r := range receipts {
		if errs[i] != nil || r.Member == "" || r.Duplicate {
			continue
		}
		if _, ok := bySlot[r.Slot]; !ok {
			slots = append(slots, r.Slot)
		}
		bySlot[r.Slot] = append(bySlot[r.Slot], i)
	}
	for _, slot := range slots {
		idx := bySlot[slot]
		members := make([]string, len(idx))
		for j, i := range idx {
			members[j] = receipts[i].Member
		}
		if err := q.fairIndex(ctx, t, slot, members); err != nil {
			for _, i := range idx {
				errs[i] = err
			}
		}
	}
}
