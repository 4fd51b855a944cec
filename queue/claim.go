package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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
	// Score is the member's score when it was claimed, in Unix
	// milliseconds: its due time, or when a retry or a reap put it back. A
	// member claimed ahead (see ClaimAhead) has a score above Claim.Now.
	Score float64
	// Tick reports a recurrence's tick, verified against the slot's
	// recurrences (see DecodeClaimed): a member that only looks like one
	// is not.
	Tick bool
}

// DueTime is Due as a time.Time.
func (c Claimed) DueTime() time.Time { return MillisTime(c.Due) }

// Claim is the result of one claim call.
type Claim struct {
	// Now is Redis's TIME when the claim ran.
	Now time.Time
	// Next is the lowest score left in the scheduled set, rounded up to
	// the millisecond, valid when HasNext (+Inf when that score is +inf).
	// A claim that took limit members reports none: more may be due, claim
	// again; nor does one whose lowest score is beyond its NextWithin.
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
// ARGV[4] -> look-ahead, ms (absent: 0)
// ARGV[5] -> how far past the look-ahead to look for next, ms (absent: 0)
//
// Returns {now, next, paused, dead, m1, due1, attempts1, score1, m2, …,
// ticks}: now
// is Redis's time (ms, with its microseconds as a fraction, so the scanner
// can sleep until the next due time to the microsecond), next is the lowest
// score left in the scheduled set, rounded up to the millisecond and found
// from counts, never by reading the head (firstScoreLua): "" when none is
// within ARGV[5] after the horizon, and when the claim took limit members
// (then more may be due, claim again), "inf" when the lowest is +inf; due is the original due
// time (kept from the first claim through retries and reaps), attempts the
// failed attempts so far, score the member's score when claimed, paused "1"
// when the slot's paused key exists: then nothing is claimed and next is ""
// (a paused slot must be looked at again within the poll interval, never at
// an overdue score, which would spin). A score of -inf can never be
// honoured: such a member goes to the dead set instead (and, for an
// envelope, leaves the ids index); dead counts them. Claiming leaves the ids
// index alone: an id keeps naming its member while it is in flight. ticks,
// present only when a claimed member is a tick its slot's recurrence vouches
// for (tickLua), lists the positions of those members among the claimed ones
// (from 0, comma-separated): a claim verifies its ticks in the same call, and
// a batch with no member that starts like a tick costs a prefix check per
// member and no byte of reply.
//
// With a look-ahead, members scored up to now + look-ahead are claimed too:
// the caller holds those whose score is above now until their score has
// passed on Redis's clock, never publishing one early. Their lease counts
// from now + look-ahead, so it covers the hold.
//
// When nothing is due it only counts: an idle slot costs one ZCOUNT besides
// TIME and the pause check, and two per doubling of the distance to the
// next score within ARGV[5]. Otherwise the records of the
// claimed members are read and written with one variadic command per chunk
// (claimChunk). Attempts are looked up only for members that have a due
// record (were claimed before): a member that failed keeps its due record
// until it is settled for good, so a first claim costs no attempts lookup.
var claimScript = drainScript(nowLua, idsLua, buryLua, recurLua, tickLua, firstScoreLua, fmt.Sprintf("local chunk = %d\n", claimChunk), leaseClaimedLua, `
local out = {string.format('%.3f', tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000), '', '0', '0'}
if redis.call('HLEN', paused) > 0 then
  out[3] = '1'
  return out
end
local horizon = now + math.max(tonumber(ARGV[4] or '0') or 0, 0)
local within = tonumber(ARGV[5] or '') or 0
if zc(sched, horizon) == 0 then
  out[2] = first_above(sched, horizon, within, 0) or ''
  return out
end
local limit = tonumber(ARGV[1])
local deadline = horizon + tonumber(ARGV[2])
local envelopes = ARGV[3] == '1'
local items = redis.call('ZRANGEBYSCORE', sched, '-inf', string.format('%.0f', horizon), 'WITHSCORES', 'LIMIT', 0, limit)
local n = #items / 2
local ticks = {}
if n > 0 then
  redis.call('ZREMRANGEBYRANK', sched, 0, n - 1)
  local ms, ss, buried = {}, {}, 0
  for i = 1, #items, 2 do
    local m, s = items[i], items[i + 1]
    if s == '-inf' then
      bury(m, 'due time -inf can never be honoured', envelopes and idof(m) or '', s)
      buried = buried + 1
    else
      ms[#ms + 1], ss[#ss + 1] = m, s
    end
  end
  out[4] = tostring(buried)
  lease_claimed(ms, ss, deadline, out, ticks)
end
if n < limit then
  out[2] = first_above(sched, horizon, within, 0) or ''
end
if #ticks > 0 then out[#out + 1] = table.concat(ticks, ',') end
return out
`)

// claimHeader is the number of elements before the first member of
// claimScript's reply: now, next, paused, dead; claimFields the number of
// elements per member: member, due, attempts, score. One element more, after
// the members, lists the verified ticks.
const (
	claimHeader = 4
	claimFields = 4
)

// Claim moves up to limit due members of one slot to the in-flight set with a
// lease, in score order.
func (q *Queue) Claim(ctx context.Context, t Topic, slot, limit int, lease time.Duration) (Claim, error) {
	return q.ClaimWith(ctx, t, slot, ClaimOptions{Limit: limit, Lease: lease})
}

// ClaimAhead is Claim that also takes the members falling due within ahead
// after Redis's now (whole milliseconds; 0 is Claim). A member whose Score is
// above Claim.Now is not due yet: the caller holds it until its score has
// passed on Redis's clock (see Claim.Now) and never publishes it earlier.
// The lease counts from now + ahead, so it covers the hold.
func (q *Queue) ClaimAhead(ctx context.Context, t Topic, slot, limit int, lease, ahead time.Duration) (Claim, error) {
	return q.ClaimWith(ctx, t, slot, ClaimOptions{Limit: limit, Lease: lease, Ahead: ahead})
}

// ClaimOptions says what one claim takes and how far it looks.
type ClaimOptions struct {
	Limit int           // most members to claim
	Lease time.Duration // each claimed member's lease, from now + Ahead
	Ahead time.Duration // the look-ahead (see ClaimAhead)
	// NextWithin bounds how far past now + Ahead the claim looks for
	// Claim.Next (0: an hour). Finding it costs two ZCOUNTs per doubling
	// of the distance, never a read of the member; a scanner that sleeps
	// at most its poll interval passes that interval.
	NextWithin time.Duration
}

// ClaimWith is ClaimAhead with every option spelled out: Claim.HasNext is
// false when the scheduled set's lowest score is beyond o.NextWithin.
func (q *Queue) ClaimWith(ctx context.Context, t Topic, slot int, o ClaimOptions) (Claim, error) {
	k := t.Keys(slot)
	script := claimScript
	if t.Fair {
		script = fairClaimScript
	}
	within := o.NextWithin
	if within <= 0 {
		within = defaultNextWithin
	}
	res, err := script.Run(ctx, q.rdb, slotKeys(k),
		o.Limit, o.Lease.Milliseconds(), flag(t.envelope()), max(o.Ahead.Milliseconds(), 0), max(within.Milliseconds(), 1),
		strconv.FormatFloat(max(t.KeyRateLimit, 0), 'f', -1, 64), t.SlotCount()).StringSlice()
	if err != nil {
		return Claim{}, fmt.Errorf("claim %s: %w", k.Scheduled, err)
	}
	c, err := parseClaim(res)
	if err != nil {
		return Claim{}, fmt.Errorf("claim %s: %w", k.Scheduled, err)
	}
	return c, nil
}

// parseClaim reads claimScript's reply. A reply without the ticks element
// (no verified tick, or a build that verified ticks in a second call) has
// no Tick set.
func parseClaim(res []string) (Claim, error) {
	if len(res) < claimHeader {
		return Claim{}, fmt.Errorf("malformed reply of %d elements", len(res))
	}
	var ticks string
	switch (len(res) - claimHeader) % claimFields {
	case 0:
	case 1:
		ticks, res = res[len(res)-1], res[:len(res)-1]
	default:
		return Claim{}, fmt.Errorf("malformed reply of %d elements", len(res))
	}
	now, err := strconv.ParseFloat(res[0], 64)
	if err != nil {
		return Claim{}, fmt.Errorf("parse now %q: %w", res[0], err)
	}
	c := Claim{Now: MillisTime(now), Paused: res[2] == "1"}
	if c.Dead, err = strconv.Atoi(res[3]); err != nil {
		return Claim{}, fmt.Errorf("parse dead %q: %w", res[3], err)
	}
	if res[1] != "" {
		if c.Next, err = strconv.ParseFloat(res[1], 64); err != nil {
			return Claim{}, fmt.Errorf("parse next %q: %w", res[1], err)
		}
		c.HasNext = true
	}
	if n := (len(res) - claimHeader) / claimFields; n > 0 {
		c.Messages = make([]Claimed, n)
	}
	for i := range c.Messages {
		j := claimHeader + claimFields*i
		m := Claimed{Member: res[j]}
		if m.Due, err = strconv.ParseFloat(res[j+1], 64); err != nil {
			return Claim{}, fmt.Errorf("parse due %q: %w", res[j+1], err)
		}
		if m.Attempts, err = strconv.Atoi(res[j+2]); err != nil {
			return Claim{}, fmt.Errorf("parse attempts %q: %w", res[j+2], err)
		}
		if m.Score, err = strconv.ParseFloat(res[j+3], 64); err != nil {
			return Claim{}, fmt.Errorf("parse score %q: %w", res[j+3], err)
		}
		c.Messages[i] = m
	}
	if ticks == "" {
		return c, nil
	}
	for _, f := range strings.Split(ticks, ",") {
		i, err := strconv.Atoi(f)
		if err != nil || i < 0 || i >= len(c.Messages) {
			return Claim{}, fmt.Errorf("parse ticks %q: position %q of %d members", ticks, f, len(c.Messages))
		}
		c.Messages[i].Tick = true
	}
	return c, nil
}

// leaseClaimedLua is what the claim and the fair claim do with the members
// they took (ms, in order, ss their scores): per chunk of claimChunk, one
// HMGET of their due records and, for those claimed before, one of their
// attempts; the due record of a first claim written, every member leased
// until deadline, (member, due, attempts, score) appended to out, and the
// positions of vouched ticks to ticks. It follows the chunk line and
// tickLua.
const leaseClaimedLua = `
local function lease_claimed(ms, ss, deadline, out, ticks)
  for c = 1, #ms, chunk do
    local last = math.min(c + chunk - 1, #ms)
    local part = {unpack(ms, c, last)}
    local known = redis.call('HMGET', dues, unpack(part))
    local prior, atts = {}, {}
    for j = 1, #part do
      if known[j] then prior[#prior + 1] = part[j] end
    end
    if #prior > 0 then
      local a = redis.call('HMGET', attempts, unpack(prior))
      for j = 1, #prior do atts[prior[j]] = a[j] end
    end
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
      out[#out + 1] = atts[m] or '0'
      out[#out + 1] = ss[c + j - 1]
      if looks_tick(m) and vouched(m) then ticks[#ticks + 1] = c + j - 2 end
    end
    if #record > 0 then redis.call('HSET', dues, unpack(record)) end
    redis.call('ZADD', inflight, unpack(lease))
  end
end`
