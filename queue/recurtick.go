package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A tick member is "\0recur\0<version>\0<tick ms>\0<spec>\0<zone>\0<envelope>":
// everything a scanner needs to deliver it and to compute the next tick,
// without reading the recurrence. Its bytes are the same for every
// delivery of one tick, and differ from the next tick's.

// IsTick reports whether member is a recurrence's tick.
func IsTick(member string) bool { return strings.HasPrefix(member, tickPrefix) }

// tick is a parsed tick member.
type tick struct {
	ver, spec, zone, env string
	at                   int64 // ms
	id                   string
}

func parseTick(member string) (tick, error) {
	rest, ok := strings.CutPrefix(member, tickPrefix)
	f := strings.SplitN(rest, "\x00", 5)
	if !ok || len(f) != 5 {
		return tick{}, invalid("malformed recurrence tick")
	}
	at, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return tick{}, invalid("recurrence tick at %q", f[1])
	}
	id, err := tickEnvelopeID(f[4])
	if err != nil {
		return tick{}, err
	}
	return tick{ver: f[0], at: at, spec: f[2], zone: f[3], env: f[4], id: id}, nil
}

// tickEnvelopeID is the id of a tick's envelope, the recurrence's id:
// read without a JSON decoder from an envelope as encode writes it
// (canonID; settling and locating ticks need only the id), else decoded.
func tickEnvelopeID(env string) (string, error) {
	if id, ok := canonID(env); ok {
		return id, nil
	}
	return EnvelopeID([]byte(env))
}

// tickMessageID is the message id tick member m is delivered with
// (TickID); false when m is not a readable tick.
func tickMessageID(m string) (string, bool) {
	if !IsTick(m) {
		return "", false
	}
	tk, err := parseTick(m)
	if err != nil {
		return "", false
	}
	return TickID(tk.id, time.UnixMilli(tk.at)), true
}

// TickID is the message id of recurrence id's tick at: the same for every
// delivery of that tick, another for the next.
func TickID(id string, at time.Time) string {
	return id + "@" + strconv.FormatInt(at.UnixMilli(), 10)
}

// tickOfID is the member and slot of the tick a tick id (TickID) names,
// built from its recurrence as it stands (the slot of the recurrence's id,
// or of an older slot count: slotCandidates). member is "" when id is not
// a tick id or its recurrence does not exist (a tick member never is); the
// member is not necessarily live: the caller looks.
func (q *Queue) tickOfID(ctx context.Context, t Topic, id string) (member string, slot int, err error) {
	rid, ok := recurrenceOfTick(id)
	if !ok {
		return "", 0, nil
	}
	for _, slot := range t.slotCandidates([]byte(rid)) {
		k := t.Keys(slot)
		v, err := q.rdb.HGet(ctx, k.Recur, rid).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return "", 0, fmt.Errorf("find recurrence %q in %s: %w", rid, k.Recur, err)
		}
		// "<version>\0<next ms>\0<last ms>\0<rest>" (recurLua)
		f := strings.SplitN(v, "\x00", 4)
		if len(f) != 4 {
			return "", 0, fmt.Errorf("%w %q in %s", errBadRecurrence, rid, k.Recur)
		}
		return tickPrefix + f[0] + "\x00" + id[len(rid)+1:] + "\x00" + f[3], slot, nil
	}
	return "", 0, nil
}

// recurrenceOfTick is the recurrence id of tick id "<id>@<ms>" (TickID);
// false when id does not have that form.
func recurrenceOfTick(id string) (string, bool) {
	i := strings.LastIndexByte(id, '@')
	if i <= 0 || i == len(id)-1 {
		return "", false
	}
	if _, err := strconv.ParseUint(id[i+1:], 10, 63); err != nil {
		return "", false
	}
	return id[:i], true
}

// decodeTick is the message a tick member delivers: the recurrence's
// message, with the tick's id and the HeaderRecurrence header.
func decodeTick(member string) (Message, error) {
	tk, err := parseTick(member)
	if err != nil {
		return Message{}, err
	}
	m, err := DecodeEnvelope([]byte(tk.env))
	if err != nil {
		return Message{}, err
	}
	h := make(map[string]string, len(m.Headers)+1)
	for k, v := range m.Headers {
		h[k] = v
	}
	h[HeaderRecurrence] = tk.id
	m.Headers = h
	m.ID = TickID(tk.id, time.UnixMilli(tk.at))
	return m, nil
}

// tickArgs is how many ARGV one tick takes in tickScript.
const tickArgs = 5

// tickScript settles ticks: acknowledges them (or, for a tick that failed,
// only advances it) and writes each one's next tick.
//
// KEYS    -> slotKeys
// ARGV[1] -> "1": the ticks were confirmed (ack them); "0": they failed
// then per tick, tickArgs values: member, recurrence id, version, tick (ms),
// next tick (ms; "" when the spec never matches again)
//
// A confirmed tick leaves the in-flight set (when it is still there) and its
// records go, as with Ack (attempts and reasons only while the slot has
// failed messages at all: one HLEN, not three commands a tick). Then, only when the recurrence exists in the
// tick's version and names this tick as its next, the next tick is
// scheduled and named: a duplicate, an ack after a remove or a replace, or
// a tick whose failure advanced it already writes nothing. A confirmed tick
// later than the last delivered one becomes the last. It publishes no
// wake-up: the daemon that runs it scans the slot and wakes its own scanner
// (TickSettlement.Earliest), so its Redis user needs no PUBLISH. Returns,
// per tick, 1 when it wrote the next tick, else 0.
var tickScript = drainScript(forgetLua, recurLua, fmt.Sprintf("local step = %d\n", tickArgs), `
local acking = ARGV[1] == '1'
local failed = redis.call('HLEN', attempts) > 0
local out = {}
for i = 2, #ARGV, step do
  local m, id, ver, at, nxt = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  if acking and redis.call('ZREM', inflight, m) == 1 then
    if failed then forget(m) else redis.call('HDEL', dues, m) end
  end
  local r, v = 0, redis.call('HGET', recur, id)
  local cver, cnext, clast, rest
  if v then cver, cnext, clast, rest = parse_recur(v) end
  if cver == ver then
    local last = clast
    if acking and (clast == '' or tonumber(at) > tonumber(clast)) then last = at end
    if cnext == at then
      if nxt ~= '' then
        redis.call('ZADD', sched, nxt, tick_member(ver, nxt, rest))
      end
      cnext, r = nxt, 1
    end
    if r == 1 or last ~= clast then
      redis.call('HSET', recur, id, ver .. '\0' .. cnext .. '\0' .. last .. '\0' .. rest)
    end
  end
  out[#out + 1] = r
end
return out
`)

// TickSettlement is what SettleTicks did.
type TickSettlement struct {
	// Advanced is how many ticks wrote their recurrence's next tick.
	Advanced int
	// Skipped is how many ticks those next ticks passed over: ticks that
	// fell due while nothing could deliver them (the gap rule).
	Skipped int
	// Earliest is the earliest next tick written (zero if none).
	Earliest time.Time
	// Unreadable counts ticks whose member or spec this daemon could not
	// read: settled without a next tick, their recurrences stop (Err says
	// why) until they are set again.
	Unreadable int
	Err        error
}

// SettleTicks writes the next tick of each of members, ticks of slot of t
// (IsTick), in the same script that acknowledges them when confirmed. now
// is the time the ticks were settled (Redis's clock): each next tick is the
// first of its schedule after both the tick and now, so after a gap the
// recurrence delivers one tick from inside it and continues on schedule. A
// tick that failed for good (confirmed false) is advanced before it is
// dead-lettered, so its recurrence goes on. SettleTicksAt takes a time per
// tick.
func (q *Queue) SettleTicks(ctx context.Context, t Topic, slot int, members []string, confirmed bool, now time.Time) (TickSettlement, error) {
	ticks := make([]TickAt, len(members))
	for i, m := range members {
		ticks[i] = TickAt{Member: m, At: now}
	}
	return q.SettleTicksAt(ctx, t, slot, ticks, confirmed)
}

// TickAt is a tick to settle and the moment its delivery was decided, on
// Redis's clock: when the broker confirmed it (or refused it for good),
// not when the settlement is written, which may be much later (acks wait
// to be grouped, Redis may stall). The gap rule counts the ticks that fell
// due before At as missed, so a tick confirmed before the next one is due
// never skips it.
type TickAt struct {
	Member string
	At     time.Time
}

// SettleTicksAt is SettleTicks with each tick's own settling time: each
// next tick is the first of its schedule after both the tick and its At.
func (q *Queue) SettleTicksAt(ctx context.Context, t Topic, slot int, ticks []TickAt, confirmed bool) (TickSettlement, error) {
	var st TickSettlement
	if len(ticks) == 0 {
		return st, nil
	}
	args := make([]any, 0, 1+tickArgs*len(ticks))
	args = append(args, flag(confirmed))
	skipped := make([]int, 0, len(ticks))
	schedules := map[[2]string]RecurSpec{}
	for _, tk := range ticks {
		a, n, err := tickCall(tk.Member, tk.At, schedules)
		if err != nil {
			st.Unreadable++
			st.Err = err
		}
		args = append(args, a...)
		skipped = append(skipped, n)
	}
	k := t.Keys(slot)
	res, err := tickScript.Run(ctx, q.rdb, slotKeys(k), args...).Int64Slice()
	if err != nil {
		return st, fmt.Errorf("settle %d ticks in %s: %w", len(ticks), k.Recur, err)
	}
	var advanced []string
	for i, r := range res {
		if r != 1 || i >= len(skipped) {
			continue
		}
		if id, _ := args[1+tickArgs*i+1].(string); id != "" {
			advanced = append(advanced, id)
		}
		st.Advanced++
		st.Skipped += skipped[i]
		next, _ := args[1+tickArgs*i+4].(string)
		if ms, err := strconv.ParseInt(next, 10, 64); err == nil && (st.Earliest.IsZero() || ms < st.Earliest.UnixMilli()) {
			st.Earliest = time.UnixMilli(ms)
		}
	}
	if err := q.fairIndexRecur(ctx, t, slot, advanced); err != nil {
		return st, fmt.Errorf("settle ticks: %w", err)
	}
	return st, nil
}

// tickCall is the tickScript arguments of tick member m settled at now, and
// how many ticks its next tick passes over. A tick that does not parse, or
// whose spec does not here, is settled without a next tick (its recurrence
// "" does not exist), and the error says why: it must not hold its slot.
func tickCall(m string, now time.Time, schedules map[[2]string]RecurSpec) ([]any, int, error) {
	none := []any{m, "", "", "0", ""}
	tk, err := parseTick(m)
	if err != nil {
		return none, 0, err
	}
	key := [2]string{tk.spec, tk.zone}
	s, ok := schedules[key]
	if !ok {
		if s, err = ParseSpec(tk.spec, tk.zone); err != nil {
			return none, 0, fmt.Errorf("recurrence %q: %w", tk.id, err)
		}
		schedules[key] = s
	}
	next, n, ok := s.Next(time.UnixMilli(tk.at), now)
	nextArg := ""
	if ok {
		nextArg = strconv.FormatInt(next.UnixMilli(), 10)
	}
	return []any{m, tk.id, tk.ver, strconv.FormatInt(tk.at, 10), nextArg}, n, nil
}
