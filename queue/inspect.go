package queue

import (
	"context"
	"fmt"
	"strconv"
)

// inspectScript reads everything one slot knows of a member.
//
// KEYS    -> slotKeys
// ARGV[1] -> member ("" to look it up by envelope id)
// ARGV[2] -> envelope id ("" for a raw member)
//
// Returns {} when the id names nothing, else {member, score or "", lease
// deadline or "", time of death or "", original due or "", attempts (a dead
// member's when it is neither scheduled nor in flight), last error or ""}.
var inspectScript = slotScript(idsLua, `
local m = ARGV[1]
if m == '' then
  m = lookup(ARGV[2])[1]
  if not m then return {} end
end
local function z(key) return redis.call('ZSCORE', key, m) or '' end
local s, f, d = z(sched), z(inflight), z(dead)
local n = redis.call('HGET', attempts, m)
if not n and s == '' and f == '' then n = redis.call('HGET', deadatts, m) end
return {m, s, f, d, redis.call('HGET', dues, m) or '', n or '0', redis.call('HGET', reasons, m) or ''}
`)

// Inspect says where member is on t: in flight, retrying, scheduled, dead or
// absent (checked in that order: the same bytes scheduled again while in
// flight show as in flight), with its slot, due time, attempts and last
// error. On envelope topics the slot comes from the member's id.
func (q *Queue) Inspect(ctx context.Context, t Topic, member []byte) (Entry, error) {
	e, _, err := q.inspect(ctx, t, t.SlotOf(member), string(member), "")
	return e, err
}

// InspectID is Inspect of the message an envelope id names, found through
// the :ids index while it is scheduled or in flight; else, for a
// recurrence's tick id (TickID), that tick while it waits or is in flight;
// else the most recent dead message with that id (a scan of the slot's
// dead set); else absent.
func (q *Queue) InspectID(ctx context.Context, t Topic, id string) (Entry, error) {
	if err := t.needEnvelope(id); err != nil {
		return Entry{}, fmt.Errorf("inspect: %w", err)
	}
	slot := t.SlotOfID(id)
	e, found, err := q.inspect(ctx, t, slot, "", id)
	if err != nil || found {
		return e, err
	}
	member, tslot, err := q.tickOfID(ctx, t, id)
	if err != nil {
		return Entry{}, fmt.Errorf("inspect id %q: %w", id, err)
	}
	if member != "" {
		if e, found, err := q.inspect(ctx, t, tslot, member, ""); err != nil || found {
			return e, err
		}
	}
	dead, err := q.deadByID(ctx, t, id)
	if err != nil {
		return Entry{}, fmt.Errorf("inspect id %q: %w", id, err)
	}
	if len(dead) == 0 {
		return Entry{Slot: slot, State: "absent"}, nil
	}
	newest := dead[0]
	for _, d := range dead[1:] {
		if d.Died.After(newest.Died) {
			newest = d
		}
	}
	e, _, err = q.inspect(ctx, t, newest.Slot, newest.Member, "")
	return e, err
}

func (q *Queue) inspect(ctx context.Context, t Topic, slot int, member, id string) (Entry, bool, error) {
	k := t.Keys(slot)
	res, err := inspectScript.Run(ctx, q.rdb, slotKeys(k), member, id).StringSlice()
	if err != nil {
		return Entry{}, false, fmt.Errorf("inspect in %s: %w", k.Scheduled, err)
	}
	if len(res) == 0 {
		return Entry{Slot: slot, State: "absent"}, false, nil
	}
	if len(res) != 7 {
		return Entry{}, false, fmt.Errorf("inspect in %s: malformed reply of %d elements", k.Scheduled, len(res))
	}
	e := Entry{Slot: slot, Member: res[0], State: "absent"}
	e.Attempts, _ = strconv.Atoi(res[5])
	switch {
	case res[2] != "":
		e.State, e.LeaseUntil, e.Due = "inflight", parseMillis(res[2]), parseMillis(res[4])
	case res[1] != "" && e.Attempts > 0:
		e.State, e.Due = "retrying", parseMillis(res[1])
	case res[1] != "":
		e.State, e.Due = "scheduled", parseMillis(res[1])
	case res[3] != "":
		e.State, e.Died = "dead", parseMillis(res[3])
	}
	if e.Attempts > 0 || e.State == "dead" {
		e.LastError = res[6]
	}
	return e, e.State != "absent", nil
}
