package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Whether a topic is held by its flow control right now is known only to
// the replicas whose scanners wait; each one reports it in the topic's held
// HASH (FlowKeys.Held), one field per replica, so stats and the console can
// show it. A report carries a deadline (Redis's clock): the replica renews
// it while the topic stays held and deletes it when it is no longer held, so
// the report of a replica that died expires by itself. Held reports cost
// nothing while no topic is held.

// Why a topic is held, as reports and the delaybridge_topic_held gauge say.
const (
	HeldRate  = "rate"  // the rate limit has no permit left
	HeldQueue = "queue" // the hold queue has more ready messages than hold-above
)

// Held is one replica's report that it holds a topic.
type Held struct {
	// Replica is the reporting replica's id.
	Replica string
	// Reasons are HeldRate and/or HeldQueue.
	Reasons []string
	// Depth is the hold queue's ready count as the replica last read it;
	// -1 when it does not know it (no hold queue, or the read failed).
	Depth int
	// Until is when the report expires unless renewed (Redis's clock).
	Until time.Time
}

// By reports whether reason is one of h's reasons.
func (h Held) By(reason string) bool {
	for _, r := range h.Reasons {
		if r == reason {
			return true
		}
	}
	return false
}

// reportHeldScript writes or deletes one replica's held report.
//
// KEYS[1] -> FlowKeys.Held
// ARGV[1] -> replica id
// ARGV[2] -> "<reasons> <depth>" ("" deletes the replica's report)
// ARGV[3] -> ttl, ms
//
// A report is "<reasons> <depth> <deadline ms>". Reports whose deadline
// passed are deleted (a small hash: one field per holding replica), and the
// key expires with the latest one left. Runs on a full Redis: it
// is one small key. Returns 1.
var reportHeldScript = redis.NewScript(allowOOMLua + nowLua + `
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. string.format('%.0f', now + tonumber(ARGV[3])))
end
local last = 0
for _, r in ipairs(redis.call('HKEYS', KEYS[1])) do
  local deadline = tonumber(string.match(redis.call('HGET', KEYS[1], r) or '', '(%d+)$'))
  if not deadline or deadline < now then
    redis.call('HDEL', KEYS[1], r)
  else
    last = math.max(last, deadline)
  end
end
if last > 0 then
  redis.call('PEXPIRE', KEYS[1], string.format('%.0f', last - now + 1))
end
return 1
`)

// ReportHeld records that replica holds t (h's Reasons and Depth), for
// ttl unless renewed; h nil deletes the replica's report.
func (q *Queue) ReportHeld(ctx context.Context, t Topic, replica string, h *Held, ttl time.Duration) error {
	v := ""
	if h != nil {
		v = strings.Join(h.Reasons, ",") + " " + strconv.Itoa(h.Depth)
	}
	err := reportHeldScript.Run(ctx, q.rdb, []string{t.FlowKeys().Held}, replica, v, max(1, ttl.Milliseconds())).Err()
	if err != nil {
		return fmt.Errorf("report %s held: %w", t.Name, err)
	}
	return nil
}

// heldScript returns a topic's held reports that have not expired.
//
// KEYS[1] -> FlowKeys.Held
//
// Returns {replica, report, …}.
var heldScript = redis.NewScript(nowLua + `
local out = {}
for _, r in ipairs(redis.call('HKEYS', KEYS[1])) do
  local v = redis.call('HGET', KEYS[1], r)
  local deadline = tonumber(string.match(v or '', '(%d+)$'))
  if deadline and deadline >= now then
    out[#out + 1] = r
    out[#out + 1] = v
  end
end
return out
`)

// HeldOf returns, for every topic of ts, the replicas that report holding
// it now (none: the topic is not held by its flow control), by replica id.
func (q *Queue) HeldOf(ctx context.Context, ts []Topic) ([][]Held, error) {
	out := make([][]Held, len(ts))
	for i, t := range ts {
		r, err := heldScript.Run(ctx, q.rdb, []string{t.FlowKeys().Held}).StringSlice()
		if err != nil {
			return nil, fmt.Errorf("read whether %s is held: %w", t.Name, err)
		}
		for j := 0; j+1 < len(r); j += 2 {
			if h, ok := parseHeld(r[j], r[j+1]); ok {
				out[i] = append(out[i], h)
			}
		}
	}
	return out, nil
}

// parseHeld reads one report, "<reasons> <depth> <deadline ms>".
func parseHeld(replica, v string) (Held, bool) {
	f := strings.Fields(v)
	if len(f) != 3 {
		return Held{}, false
	}
	depth, err1 := strconv.Atoi(f[1])
	until, err2 := strconv.ParseFloat(f[2], 64)
	if err1 != nil || err2 != nil {
		return Held{}, false
	}
	return Held{Replica: replica, Reasons: strings.Split(f[0], ","), Depth: depth, Until: MillisTime(until)}, true
}

// HeldWhy says why a topic is held, for people: "by the rate limit" and/or
// "by hold-above (<queue>: <depth>)", joined by "and"; "" when reasons is
// empty. depth is the hold queue's depth as the caller writes numbers, ""
// when it was not read.
func HeldWhy(reasons []string, holdQueue, depth string) string {
	var parts []string
	for _, why := range reasons {
		switch why {
		case HeldRate:
			parts = append(parts, "by the rate limit")
		case HeldQueue:
			if holdQueue == "" {
				holdQueue = "the hold queue"
			}
			if depth == "" {
				depth = "depth not read"
			} else {
				depth += " ready"
			}
			parts = append(parts, "by hold-above ("+holdQueue+": "+depth+")")
		}
	}
	return strings.Join(parts, " and ")
}
