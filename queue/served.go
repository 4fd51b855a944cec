package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A daemon forwards the topics of its own environment (DELAYBRIDGE_TOPICS),
// which may be fewer than the registry holds or a producer's environment
// names: a topic that no live daemon forwards is accepted and then waits,
// silently, until one does. Each daemon therefore reports the topics it
// forwards with every heartbeat (ReportServed), so the CLI, the API, the
// console and the daemons' metrics can say which topics no live replica
// forwards (Forwarding), and replicas does not credit a daemon with slots
// of a topic it does not run.
//
// The reports are one HASH beside the replica set (ServedKey), a field per
// replica; a report counts only while its replica is live (in the replica
// set), and each report drops the fields of replicas no longer live. A live
// replica without a report (a daemon older than the report, or one that
// has not written it yet) is taken to forward every topic: the reports
// never make a warning out of what they do not know.

// ServedKey is the HASH replica id → the topics it forwards, comma-separated.
func ServedKey(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + ":replicas:topics"
}

// servedScript writes one replica's report and drops those of replicas
// that are not live.
//
// KEYS[1] -> served HASH (replica id → topics, comma-separated)
// ARGV[1] -> replica id
// ARGV[2] -> its topics
// ARGV[3] -> time to live of the HASH, ms (the heartbeat's TTL)
// ARGV[4…] -> the live replicas
//
// One field per replica, so the sweep is small. Runs on a full Redis
// (allowOOMLua): it is one small key bounded by the replicas, and a report
// missing under pressure would only hide a warning. The HASH expires a TTL
// after the last report, so no daemon left means no key left. Returns 1.
var servedScript = redis.NewScript(allowOOMLua + `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local live = {}
for i = 4, #ARGV do live[ARGV[i]] = true end
live[ARGV[1]] = true
for _, r in ipairs(redis.call('HKEYS', KEYS[1])) do
  if not live[r] then redis.call('HDEL', KEYS[1], r) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)

// ReportServed records that replica forwards topics, for ttl, and forgets
// the reports of replicas not in live.
func (q *Queue) ReportServed(ctx context.Context, prefix, replica string, topics, live []string, ttl time.Duration) error {
	args := make([]any, 0, 3+len(live))
	args = append(args, replica, strings.Join(topics, ","), max(1, ttl.Milliseconds()))
	for _, id := range live {
		args = append(args, id)
	}
	if err := servedScript.Run(ctx, q.rdb, []string{ServedKey(prefix)}, args...).Err(); err != nil {
		return fmt.Errorf("report the topics %s forwards in %s: %w", replica, ServedKey(prefix), err)
	}
	return nil
}

// Unserve drops replica's report, as it leaves the replica set: the HASH
// goes with the last report, so a stopped deployment leaves no key behind.
func (q *Queue) Unserve(ctx context.Context, prefix, replica string) error {
	if err := q.rdb.HDel(ctx, ServedKey(prefix), replica).Err(); err != nil {
		return fmt.Errorf("drop the topics %s forwards from %s: %w", replica, ServedKey(prefix), err)
	}
	return nil
}

// Forwarding is which live replica forwards which topic, as the replicas
// report it (ReportServed).
type Forwarding struct {
	// Live are the live replicas, sorted.
	Live []string
	// Served are the topics each live replica reports it forwards; a
	// live replica that has not reported is absent (it counts as
	// forwarding every topic).
	Served map[string][]string
}

// Forwarding reads the live replicas of prefix and the topics each forwards.
func (q *Queue) Forwarding(ctx context.Context, prefix string) (Forwarding, error) {
	set, err := q.Replicas(ctx, prefix)
	if err != nil {
		return Forwarding{}, err
	}
	f := Forwarding{Live: set.Live, Served: map[string][]string{}}
	if len(set.Live) == 0 {
		return f, nil
	}
	vals, err := q.rdb.HMGet(ctx, ServedKey(prefix), set.Live...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return Forwarding{}, fmt.Errorf("read the topics the replicas forward in %s: %w", ServedKey(prefix), err)
	}
	for i, v := range vals {
		if s, ok := v.(string); ok {
			f.Served[set.Live[i]] = strings.FieldsFunc(s, func(r rune) bool { return r == ',' })
		}
	}
	return f, nil
}

// Forwards reports whether replica forwards topic (true when it has not
// said).
func (f Forwarding) Forwards(replica, topic string) bool {
	ts, ok := f.Served[replica]
	return !ok || slices.Contains(ts, topic)
}

// Forwarders are the live replicas that forward topic.
func (f Forwarding) Forwarders(topic string) []string {
	var out []string
	for _, id := range f.Live {
		if f.Forwards(id, topic) {
			out = append(out, id)
		}
	}
	return out
}

// Unforwarded says why topic's messages wait for no one, or "" when a live
// replica forwards it: the warning the CLI, the API and the console give
// when a message is scheduled to it, and stats beside its overdue figure.
// With no live replica at all it says nothing: daemons run with
// DELAYBRIDGE_OWNERSHIP=all do not heartbeat, and a Redis that no daemon
// serves is what `replicas` reports ("no live replicas").
func (f Forwarding) Unforwarded(topic string) string {
	if len(f.Live) == 0 || len(f.Forwarders(topic)) > 0 {
		return ""
	}
	return fmt.Sprintf("no live replica forwards %s: no live daemon (%d live) has %s in its DELAYBRIDGE_TOPICS; its messages wait until one does", topic, len(f.Live), topic)
}

// WarnUnforwarded is what a front door says after scheduling to t: "" while
// a live replica forwards it, else why its messages wait
// (Forwarding.Unforwarded). A topic that is not registered is noted
// (NoteWaiting), so the daemons' gauge of unforwarded messages counts it.
func (q *Queue) WarnUnforwarded(ctx context.Context, t Topic) (string, error) {
	f, err := q.Forwarding(ctx, t.Prefix)
	if err != nil {
		return "", err
	}
	w := f.Unforwarded(t.Name)
	if w == "" {
		return "", nil
	}
	if _, ok, err := q.Layout(ctx, t.Prefix, t.Name); err != nil {
		return w, err
	} else if !ok {
		return w, q.NoteWaiting(ctx, t)
	}
	return w, nil
}

// Owned is OwnedSlots over f.Live, less the topics a replica does not
// forward: they are absent from its map, and the slots rendezvous gives it
// wait for no one.
func (f Forwarding) Owned(topics []Topic, all bool) []map[string][]int {
	owned := OwnedSlots(f.Live, topics, all)
	for i, id := range f.Live {
		for _, t := range topics {
			if !f.Forwards(id, t.Name) {
				delete(owned[i], t.Name)
			}
		}
	}
	return owned
}
