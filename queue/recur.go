package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A recurrence is a message delivered at every tick of a schedule. It lives
// in its slot (the slot of its id, as for envelope ids) as one field of the
// slot's recur HASH, and its next tick is one member of the slot's scheduled
// set: claimed, published, retried and dead-lettered like any message. The
// script that acknowledges a tick writes the next one, only while the
// recurrence exists in the version the tick was cut from and names that
// tick as its next: a duplicate ack, an ack after `recur rm`, or one after
// the recurrence was replaced writes nothing, so at most one next tick
// exists whatever the replicas or crashes.

// HeaderRecurrence names the header that carries a tick's recurrence id.
const HeaderRecurrence = ReservedHeaderPrefix + "recurrence"

// Recurrence is a message delivered at every tick of Spec in Zone.
type Recurrence struct {
	// ID names the recurrence within its topic (1 to MaxIDLen bytes of
	// UTF-8, no control characters); it decides the slot.
	ID string
	// Spec is when ticks fall due (see ParseSpec): "0 9 * * *",
	// "*/3 * * * * *", "@daily", "@every 5m".
	Spec string
	// Zone is the IANA zone cron fields are read in; "" is UTC.
	Zone string
	// Message is what every tick delivers: its Body, Headers, RoutingKey
	// and Properties (its ID is ignored: each tick has its own, see
	// TickID). Headers and routing key work on raw topics too.
	Message Message
}

// RecurrenceInfo is a stored recurrence and where it stands.
type RecurrenceInfo struct {
	Recurrence
	Slot int
	// Next is the tick waiting to be delivered (zero when the spec never
	// matches again).
	Next time.Time
	// Last is the last tick delivered (zero before the first).
	Last time.Time
}

// tickPrefix starts every tick member: no JSON envelope and, in practice,
// no raw message starts with a NUL byte.
const tickPrefix = "\x00recur\x00"

// recurLua defines parse_recur(v), the fields of a recur HASH value
// "<version>\0<next ms>\0<last ms>\0<rest>" (rest: "<spec>\0<zone>\0<envelope>",
// the part every tick member repeats), and tick_member(ver, at, rest), the
// scheduled member of the tick at ms "at": "\0recur\0<version>\0<at>\0<rest>".
// An empty next means no tick waits; an empty last, none was delivered.
const recurLua = `
local function parse_recur(v)
  return string.match(v, '^([^%z]*)%z([^%z]*)%z([^%z]*)%z(.*)$')
end
local function tick_member(ver, at, rest)
  return '\0recur\0' .. ver .. '\0' .. at .. '\0' .. rest
end
`

// recurSetScript creates or replaces a recurrence.
//
// KEYS    -> slotKeys
// ARGV[1] -> recurrence id
// ARGV[2] -> version (new, unique)
// ARGV[3] -> first tick (ms)
// ARGV[4] -> rest: "<spec>\0<zone>\0<envelope>"
// ARGV[5] -> wake channel ("" publishes nothing)
// ARGV[6] -> wake payload before the score
//
// Returns 1 when it replaced one. The old version's waiting tick leaves the
// scheduled set; a tick of it in flight is delivered, but its ack finds
// another version and writes no next tick. The last delivered tick stays.
var recurSetScript = growScript(nowLua, scoreLua, forgetLua, recurLua, `
local id, ver, first, rest = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local old, last, replaced = redis.call('HGET', recur, id), '', 0
if old then
  local over, onext, olast, orest = parse_recur(old)
  if over then
    if onext ~= '' then
      local m = tick_member(over, onext, orest)
      if redis.call('ZREM', sched, m) == 1 then forget(m) end
    end
    last = olast
  end
  replaced = 1
end
redis.call('HSET', recur, id, ver .. '\0' .. first .. '\0' .. last .. '\0' .. rest)
redis.call('ZADD', sched, first, tick_member(ver, first, rest))
wake(ARGV[5], ARGV[6], first)
return replaced
`)

// SetRecurrence creates r on t, or replaces the recurrence of the same id
// (its waiting tick is dropped; the new one's first tick is the first of
// Spec after now, by Redis's clock). It returns the first tick. The trace
// context of ctx is stored with the recurrence's message (see trace.go):
// a tracing daemon starts a new trace for each tick, linked to it.
func (q *Queue) SetRecurrence(ctx context.Context, t Topic, r Recurrence) (time.Time, error) {
	now, err := q.rdb.Time(ctx).Result()
	if err != nil {
		return time.Time{}, fmt.Errorf("set recurrence %q of %s: read Redis's time: %w", r.ID, t.Name, err)
	}
	return q.setRecurrence(ctx, t, r, now)
}

func (q *Queue) setRecurrence(ctx context.Context, t Topic, r Recurrence, now time.Time) (time.Time, error) {
	if err := t.checkSize(len(r.Message.Body)); err != nil {
		return time.Time{}, fmt.Errorf("set recurrence %q: %w", r.ID, err)
	}
	r.Message = withTrace(ctx, r.Message) // every tick links to it
	rest, s, err := r.encode()
	if err != nil {
		return time.Time{}, fmt.Errorf("set recurrence %q of %s: %w", r.ID, t.Name, err)
	}
	first, ok := s.First(now)
	if !ok {
		return time.Time{}, fmt.Errorf("set recurrence %q of %s: %w: %q never matches", r.ID, t.Name, ErrBadSpec, r.Spec)
	}
	if err := q.checkLayout(ctx, t); err != nil {
		return time.Time{}, fmt.Errorf("set recurrence %q: %w", r.ID, err)
	}
	ver, err := newVersion()
	if err != nil {
		return time.Time{}, fmt.Errorf("set recurrence %q of %s: %w", r.ID, t.Name, err)
	}
	cands := t.slotCandidates([]byte(r.ID))
	if _, err := q.removeRecurrence(ctx, t, r.ID, cands[1:]); err != nil {
		return time.Time{}, fmt.Errorf("set recurrence %q: %w", r.ID, err)
	}
	slot := cands[0]
	channel, prefix := t.wakeArgs(slot)
	k := t.Keys(slot)
	at := strconv.FormatInt(first.UnixMilli(), 10)
	cmd, confirm := q.runConfirmed(ctx, recurSetScript, slotKeys(k), r.ID, ver, at, rest, channel, prefix)
	if err := cmd.Err(); err != nil {
		return time.Time{}, fmt.Errorf("set recurrence %q in %s: %w", r.ID, k.Recur, full(err))
	}
	if err := q.fairIndexRecur(ctx, t, slot, []string{r.ID}); err != nil {
		return time.Time{}, fmt.Errorf("set recurrence %q: %w", r.ID, err)
	}
	if confirm != nil {
		return time.UnixMilli(first.UnixMilli()), fmt.Errorf("set recurrence %q in %s: %w", r.ID, k.Recur, confirm)
	}
	return time.UnixMilli(first.UnixMilli()), nil
}

// encode validates r and returns the rest of its HASH value and its
// schedule.
func (r Recurrence) encode() (string, RecurSpec, error) {
	if err := CheckID(r.ID); err != nil {
		return "", RecurSpec{}, err
	}
	if err := checkPathID(r.ID); err != nil {
		return "", RecurSpec{}, err
	}
	if err := CheckNewZone(r.Zone); err != nil {
		return "", RecurSpec{}, err
	}
	s, err := ParseSpec(r.Spec, r.Zone)
	if err != nil {
		return "", RecurSpec{}, err
	}
	m := r.Message
	m.ID = r.ID
	env, err := EncodeEnvelope(m)
	if err != nil {
		return "", RecurSpec{}, err
	}
	return strings.TrimSpace(r.Spec) + "\x00" + r.Zone + "\x00" + string(env), s, nil
}

// newVersion is a version no other set of the recurrence will have.
func newVersion() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("new version: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// recurRemoveScript deletes a recurrence and its waiting tick.
//
// KEYS    -> slotKeys
// ARGV[1] -> recurrence id
//
// Returns 1 when it existed. A tick in flight is delivered; its ack finds no
// recurrence and writes no next tick.
var recurRemoveScript = drainScript(forgetLua, recurLua, `
local v = redis.call('HGET', recur, ARGV[1])
if not v then return 0 end
local ver, nxt, last, rest = parse_recur(v)
if ver and nxt ~= '' then
  local m = tick_member(ver, nxt, rest)
  if redis.call('ZREM', sched, m) == 1 then forget(m) end
end
redis.call('HDEL', recur, ARGV[1])
return 1
`)

// RemoveRecurrence deletes recurrence id of t and its waiting tick. ok is
// false when there was none. After a resize the recurrence may live in the
// slot an older slot count gave its id: it is removed from there too (see
// resize.go).
func (q *Queue) RemoveRecurrence(ctx context.Context, t Topic, id string) (ok bool, err error) {
	if err := CheckID(id); err != nil {
		return false, fmt.Errorf("remove recurrence of %s: %w", t.Name, err)
	}
	return q.removeRecurrence(ctx, t, id, t.slotCandidates([]byte(id)))
}

// removeRecurrence removes recurrence id from those of slots that hold it:
// one pipelined HEXISTS over them all, then the script where it is.
func (q *Queue) removeRecurrence(ctx context.Context, t Topic, id string, slots []int) (bool, error) {
	if len(slots) == 0 {
		return false, nil
	}
	pipe := q.rdb.Pipeline()
	found := make([]*redis.BoolCmd, len(slots))
	for i, slot := range slots {
		found[i] = pipe.HExists(ctx, t.Keys(slot).Recur, id)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return false, fmt.Errorf("find recurrence %q of %s: %w", id, t.Name, err)
	}
	ok := false
	for i, slot := range slots {
		if !found[i].Val() {
			continue
		}
		k := t.Keys(slot)
		n, err := recurRemoveScript.Run(ctx, q.rdb, slotKeys(k), id).Int()
		if err != nil {
			return ok, fmt.Errorf("remove recurrence %q in %s: %w", id, k.Recur, err)
		}
		ok = ok || n == 1
	}
	return ok, nil
}

// Recurrences lists the recurrences of t's slots, by id: a pipelined read
// of each slot's recur HASH, cheap enough for a page that refreshes.
func (q *Queue) Recurrences(ctx context.Context, t Topic) ([]RecurrenceInfo, error) {
	return q.recurrencesIn(ctx, t, nil)
}

// AllRecurrences is Recurrences and those left in slots beyond t's slot
// count by a resize down (they still tick there, drained by the daemon),
// found with SCAN as StrandedSlots finds them: a pass over the keyspace,
// for an operator's listing (recur ls).
func (q *Queue) AllRecurrences(ctx context.Context, t Topic) ([]RecurrenceInfo, error) {
	beyond, err := q.slotsBeyond(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("list recurrences of %s beyond its %d slots: %w", t.Name, t.SlotCount(), err)
	}
	return q.recurrencesIn(ctx, t, beyond)
}

// recurrencesIn lists the recurrences of t's slots and of the slots beyond.
func (q *Queue) recurrencesIn(ctx context.Context, t Topic, beyond []int) ([]RecurrenceInfo, error) {
	slots := make([]int, t.SlotCount(), t.SlotCount()+len(beyond))
	for s := range slots {
		slots[s] = s
	}
	slots = append(slots, beyond...)
	pipe := q.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(slots))
	for i, slot := range slots {
		cmds[i] = pipe.HGetAll(ctx, t.Keys(slot).Recur)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("list recurrences of %s: %w", t.Name, err)
	}
	var out []RecurrenceInfo
	for i, cmd := range cmds {
		slot := slots[i]
		k := t.Keys(slot)
		for id, v := range cmd.Val() {
			info, err := parseRecurrence(id, v)
			if err != nil {
				return nil, fmt.Errorf("list recurrences in %s: %w", k.Recur, err)
			}
			info.Slot = slot
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// RecurrenceCount is how many recurrences t has.
func (q *Queue) RecurrenceCount(ctx context.Context, t Topic) (int64, error) {
	var n int64
	for slot := range t.SlotCount() {
		k := t.Keys(slot)
		c, err := q.rdb.HLen(ctx, k.Recur).Result()
		if err != nil {
			return 0, fmt.Errorf("count recurrences in %s: %w", k.Recur, err)
		}
		n += c
	}
	return n, nil
}

// errBadRecurrence is wrapped when a stored recurrence does not parse.
var errBadRecurrence = errors.New("malformed recurrence")

// parseRecurrence reads the recur HASH value v of recurrence id.
func parseRecurrence(id, v string) (RecurrenceInfo, error) {
	f := strings.SplitN(v, "\x00", 6)
	if len(f) != 6 {
		return RecurrenceInfo{}, fmt.Errorf("%w %q: %d fields", errBadRecurrence, id, len(f))
	}
	m, err := DecodeEnvelope([]byte(f[5]))
	if err != nil {
		return RecurrenceInfo{}, fmt.Errorf("%w %q: %w", errBadRecurrence, id, err)
	}
	m.ID = ""
	info := RecurrenceInfo{Recurrence: Recurrence{ID: id, Spec: f[3], Zone: f[4], Message: m}}
	info.Next, err = optMillis(f[1])
	if err == nil {
		info.Last, err = optMillis(f[2])
	}
	if err != nil {
		return RecurrenceInfo{}, fmt.Errorf("%w %q: %w", errBadRecurrence, id, err)
	}
	return info, nil
}

// optMillis reads a Unix ms time; "" is the zero time.
func optMillis(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(n), nil
}
