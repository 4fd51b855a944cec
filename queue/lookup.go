package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Ref names messages: one member byte for byte, or the message with an id
// (an envelope's id; in the dead set of a raw topic, the MessageID of the
// member), or, for the dead set, All of them. Exactly one is set.
type Ref struct {
	Member []byte
	ID     string
	All    bool
}

// ByMember names one member, byte for byte.
func ByMember(member []byte) Ref {
	if member == nil {
		member = []byte{}
	}
	return Ref{Member: member}
}

// ByID names the message with this id.
func ByID(id string) Ref { return Ref{ID: id} }

func (r Ref) String() string {
	switch {
	case r.All:
		return "all"
	case r.ID != "":
		return "id " + strconv.Quote(r.ID)
	default:
		return describe(string(r.Member), "")
	}
}

// one checks that exactly one of the Ref's fields is set (All only when
// allowed).
func (r Ref) one(allowAll bool) error {
	n := 0
	if r.Member != nil {
		n++
	}
	if r.ID != "" {
		n++
	}
	if r.All {
		if !allowAll {
			return errors.New("a message, not all of them, must be named")
		}
		n++
	}
	if n != 1 {
		return errors.New("name exactly one of a member, an id or all")
	}
	return nil
}

// State is where a message is.
type State string

const (
	StateScheduled State = "scheduled" // waiting for its due time
	StateRetrying  State = "retrying"  // scheduled again after failed attempts
	StateInFlight  State = "in-flight" // claimed, being delivered
)

// Info is what Get knows about a live message.
type Info struct {
	Message Message
	Member  string
	Slot    int
	State   State
	// Due is when it falls due (scheduled, retrying: the score), or the time
	// the producer asked for (in flight).
	Due time.Time
	// LeaseUntil is when the claim expires (in flight only).
	LeaseUntil time.Time
	// Attempts is how many publishes failed so far.
	Attempts int
}

// getScript reads the state of one envelope by id.
//
// KEYS    -> slotKeys
// ARGV[1] -> envelope id
//
// Returns {} when the id names nothing live, else {member, score or "", lease
// deadline or "", original due or "", attempts}.
var getScript = slotScript(`
local m = redis.call('HGET', ids, ARGV[1])
if not m then return {} end
local score = redis.call('ZSCORE', sched, m)
local lease = redis.call('ZSCORE', inflight, m)
if not score and not lease then return {} end
return {m, score or '', lease or '', redis.call('HGET', dues, m) or '', redis.call('HGET', attempts, m) or '0'}
`)

// Get reads the message an envelope id names, while it is scheduled, waiting
// to retry or in flight. An id that names nothing live (never scheduled,
// cancelled, delivered or dead: see DeadFind) is ErrNotFound.
func (q *Queue) Get(ctx context.Context, t Topic, id string) (Info, error) {
	if err := t.needEnvelope(id); err != nil {
		return Info{}, fmt.Errorf("get: %w", err)
	}
	if err := q.checkLayout(ctx, t); err != nil {
		return Info{}, fmt.Errorf("get: %w", err)
	}
	var slot int
	var res []string
	for _, slot = range t.slotCandidates([]byte(id)) { // see slotCandidates: resized topics
		k := t.Keys(slot)
		r, err := getScript.Run(ctx, q.rdb, slotKeys(k), id).StringSlice()
		if err != nil {
			return Info{}, fmt.Errorf("get id %q in %s: %w", id, k.Scheduled, err)
		}
		if res = r; len(res) != 0 {
			break
		}
	}
	k := t.Keys(slot)
	if len(res) == 0 {
		k = t.Keys(t.SlotOfID(id))
		return Info{}, fmt.Errorf("get id %q in %s: %w", id, k.Scheduled, ErrNotFound)
	}
	if len(res) != 5 {
		return Info{}, fmt.Errorf("get id %q in %s: malformed reply of %d elements", id, k.Scheduled, len(res))
	}
	in := Info{Member: res[0], Slot: slot, State: StateScheduled}
	var err error
	in.Message, err = t.Decode(res[0])
	if err != nil {
		return Info{}, fmt.Errorf("get id %q: %w", id, err)
	}
	in.Attempts, _ = strconv.Atoi(res[4])
	switch {
	case res[2] != "":
		in.State = StateInFlight
		in.LeaseUntil = parseMillis(res[2])
		in.Due = parseMillis(res[3])
	default:
		in.Due = parseMillis(res[1])
		if in.Attempts > 0 {
			in.State = StateRetrying
		}
	}
	return in, nil
}
