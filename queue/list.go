package queue

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Listing walks one state of a topic slot by slot, a window at a time: each
// call is a ZRANGE by rank (O(log N + window)) that continues after the last
// member shown, so paging never blocks Redis however large the set, and a
// member shown once is not shown again while it stays where it was.

// ListState is what List walks.
type ListState string

const (
	ListScheduled ListState = "scheduled" // the scheduled set, retrying messages included
	ListRetrying  ListState = "retrying"  // scheduled members with an :attempts record
	ListInflight  ListState = "inflight"  // claimed, not yet confirmed
	ListDead      ListState = "dead"      // the dead set, oldest death first
)

// ErrBadCursor is wrapped by List's error when a cursor was not written by
// List for the same topic and state.
var ErrBadCursor = errors.New("bad cursor")

// MaxListLimit is the largest page List returns.
const MaxListLimit = 1000

// listWindows bounds the windows one List call reads: a filter that matches
// little (retrying, --due-before on in-flight messages) returns a short page
// with a cursor instead of reading the whole set.
const listWindows = 32

// ListOptions select a page.
type ListOptions struct {
	State ListState // empty means ListScheduled
	// DueBefore keeps messages due before it (scheduled, retrying: their
	// score; in flight: the time the producer asked for). Zero keeps all.
	DueBefore time.Time
	Limit     int    // 1 to MaxListLimit; 0 means 100
	Cursor    string // from the last page's Next; "" starts at slot 0
}

// Entry is one message where List or Inspect found it.
type Entry struct {
	Slot   int
	Member string
	// State is "scheduled", "retrying", "inflight", "dead" or "absent".
	State string
	// Due is the score of a scheduled or retrying message, the time the
	// producer asked for of one in flight; zero for dead or absent.
	Due        time.Time
	LeaseUntil time.Time // in flight only
	Died       time.Time // dead only
	Attempts   int
	// LastError is the reason of a dead message, or the error of the last
	// failed attempt of a retrying (or again in-flight) one.
	LastError string
}

// Page is one page of List.
type Page struct {
	Entries []Entry
	// Next continues after the last entry; "" when the walk is done.
	Next string
}

// listScript reads a window of one set, after a position.
//
// KEYS    -> slotKeys
// ARGV[1] -> "sched", "inflight" or "dead"
// ARGV[2] -> score of the last member shown ("" starts at rank 0)
// ARGV[3] -> that member
// ARGV[4] -> window size
//
// Continues at the rank after the last member when it is still at its score
// (ZRANK), else at the first member after (score, member) in the set's own
// order: ZCOUNT finds the first of the equal scores and a binary search over
// their ranks, comparing bytes as Redis does, the first member after it.
// Returns {m1, score1, due1, attempts1, reason1, …}.
var listScript = slotScript(`
local key = ({sched = sched, inflight = inflight, dead = dead})[ARGV[1]]
local function after(a, b) -- a > b, byte by byte
  for i = 1, math.min(#a, #b) do
    local x, y = a:byte(i), b:byte(i)
    if x ~= y then return x > y end
  end
  return #a > #b
end
local start = 0
local score, last = ARGV[2], ARGV[3]
if score ~= '' then
  local s = redis.call('ZSCORE', key, last)
  if s and tonumber(s) == tonumber(score) then
    start = redis.call('ZRANK', key, last) + 1
  else
    local lo = redis.call('ZCOUNT', key, '-inf', '(' .. score)
    local hi = lo + redis.call('ZCOUNT', key, score, score)
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if after(redis.call('ZRANGE', key, mid, mid)[1], last) then hi = mid else lo = mid + 1 end
    end
    start = lo
  end
end
local items = redis.call('ZRANGE', key, start, start + tonumber(ARGV[4]) - 1, 'WITHSCORES')
local out = {}
if #items == 0 then return out end
local ms = {}
for i = 1, #items, 2 do ms[#ms + 1] = items[i] end
local ds = redis.call('HMGET', dues, unpack(ms))
local as = redis.call('HMGET', ARGV[1] == 'dead' and deadatts or attempts, unpack(ms))
local rs = redis.call('HMGET', reasons, unpack(ms))
for j = 1, #ms do
  out[#out + 1] = ms[j]
  out[#out + 1] = items[2 * j]
  out[#out + 1] = ds[j] or ''
  out[#out + 1] = as[j] or '0'
  out[#out + 1] = rs[j] or ''
end
return out
`)

// listPos is where a walk stands: after (score, member) in slot, or at the
// start of slot when score is "".
type listPos struct {
	slot          int
	score, member string
}

func (p listPos) encode(state ListState) string {
	raw := string(state) + "\n" + strconv.Itoa(p.slot) + "\n" + p.score + "\n" + p.member
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func decodeListPos(t Topic, state ListState, cursor string) (listPos, error) {
	if cursor == "" {
		return listPos{}, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return listPos{}, fmt.Errorf("%w: not base64", ErrBadCursor)
	}
	parts := strings.SplitN(string(raw), "\n", 4)
	if len(parts) != 4 || parts[0] != string(state) {
		return listPos{}, fmt.Errorf("%w: not a cursor of a %s listing", ErrBadCursor, state)
	}
	slot, err := strconv.Atoi(parts[1])
	if err != nil || slot < 0 || slot >= t.SlotCount() {
		return listPos{}, fmt.Errorf("%w: topic %s has no slot %s", ErrBadCursor, t.Name, parts[1])
	}
	if _, err := strconv.ParseFloat(parts[2], 64); err != nil && parts[2] != "" {
		return listPos{}, fmt.Errorf("%w: bad score %q", ErrBadCursor, parts[2])
	}
	return listPos{slot: slot, score: parts[2], member: parts[3]}, nil
}

func (o ListOptions) check() (ListState, int, error) {
	state := o.State
	switch state {
	case "":
		state = ListScheduled
	case ListScheduled, ListRetrying, ListInflight, ListDead:
	default:
		return "", 0, fmt.Errorf("unknown state %q (scheduled, retrying, inflight or dead)", o.State)
	}
	if state == ListDead && !o.DueBefore.IsZero() {
		return "", 0, errors.New("a due time filter does not apply to dead messages")
	}
	limit := o.Limit
	if limit == 0 {
		limit = 100
	}
	if limit < 0 || limit > MaxListLimit {
		return "", 0, fmt.Errorf("limit %d is not from 1 to %d", o.Limit, MaxListLimit)
	}
	return state, limit, nil
}

// List returns a page of t's messages in one state, slot after slot, each
// slot in its set's order (scheduled: by due time; in flight: by lease
// deadline; dead: by time of death). Each Redis call reads one window of at
// most Limit members; a page may come back short (a filter that matches
// little) with a Next to go on from.
func (q *Queue) List(ctx context.Context, t Topic, opt ListOptions) (Page, error) {
	state, limit, err := opt.check()
	if err != nil {
		return Page{}, fmt.Errorf("list %s: %w", t.Name, err)
	}
	pos, err := decodeListPos(t, state, opt.Cursor)
	if err != nil {
		return Page{}, fmt.Errorf("list %s: %w", t.Name, err)
	}
	set := map[ListState]string{ListScheduled: "sched", ListRetrying: "sched", ListInflight: "inflight", ListDead: "dead"}[state]
	var page Page
	for w := 0; w < listWindows; w++ {
		k := t.Keys(pos.slot)
		res, err := listScript.Run(ctx, q.rdb, slotKeys(k), set, pos.score, pos.member, limit).StringSlice()
		if err != nil {
			return Page{}, fmt.Errorf("list %s: %w", k.Scheduled, err)
		}
		if len(res)%5 != 0 {
			return Page{}, fmt.Errorf("list %s: malformed reply of %d elements", k.Scheduled, len(res))
		}
		slotDone := len(res)/5 < limit
		for i := 0; i < len(res); i += 5 {
			e := listEntry(pos.slot, set, res[i:i+5])
			pos.score, pos.member = res[i+1], res[i]
			if !opt.DueBefore.IsZero() && !e.Due.Before(opt.DueBefore) {
				if set == "sched" { // in due order: nothing further qualifies
					slotDone = true
					break
				}
				continue
			}
			if state == ListRetrying && e.State != "retrying" {
				continue
			}
			if page.Entries = append(page.Entries, e); len(page.Entries) == limit {
				page.Next = pos.encode(state)
				return page, nil
			}
		}
		if slotDone {
			if pos.slot+1 == t.SlotCount() {
				return page, nil
			}
			pos = listPos{slot: pos.slot + 1}
		}
	}
	page.Next = pos.encode(state)
	return page, nil
}

// listEntry reads one {member, score, due, attempts, reason} of listScript.
func listEntry(slot int, set string, f []string) Entry {
	e := Entry{Slot: slot, Member: f[0]}
	e.Attempts, _ = strconv.Atoi(f[3])
	score := parseMillis(f[1])
	switch set {
	case "sched":
		e.State, e.Due = "scheduled", score
		if e.Attempts > 0 {
			e.State = "retrying"
		}
	case "inflight":
		e.State, e.Due, e.LeaseUntil = "inflight", parseMillis(f[2]), score
	default:
		e.State, e.Died = "dead", score
	}
	if e.Attempts > 0 || e.State == "dead" {
		e.LastError = f[4]
	}
	return e
}
