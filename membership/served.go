package membership

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/luakeys"
	"github.com/delaybridge/delaybridge/queue"
)

// A daemon forwards the topics of its own environment (DELAYBRIDGE_TOPICS),
// which may be fewer than the registry holds or a producer's environment
// names: a topic that no live daemon forwards is accepted and then waits,
// silently, until one does. Each daemon therefore reports the topics it
// forwards with every heartbeat (ReportServed), so the CLI, the API, the
// console and the daemons' metrics can say which topics no live replica
// forwards (Forwarding), and so that a topic's slots are shared only among
// the live replicas that forward it (Forwarding.Assign): a replica that
// does not run a topic owns none of its slots, which would otherwise wait
// for no one until it left.
//
// The reports are one HASH beside the replica set (ServedKey), a field per
// replica; a report counts only while its replica is live (in the replica
// set), and each report drops the fields of replicas no longer live. A live
// replica without a report (a daemon older than the report, or one that
// has not written it yet) is taken to forward every topic: the reports
// never make a warning out of what they do not know, and during a rolling
// upgrade or a start-up such a replica keeps its share of every topic, as
// before the reports, rather than leave it to no one.

// ServedKey is the HASH replica id → the topics it forwards, comma-separated.
func ServedKey(prefix string) string {
	if prefix == "" {
		prefix = queue.DefaultPrefix
	}
	return prefix + ":replicas:topics"
}

// servedScript writes one replica's report, drops those of replicas that
// are not live, and returns the reports of the live ones.
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
// after the last report, so no daemon left means no key left. Returns the
// report of each of ARGV[4…] in that order (nil: none), so the heartbeat
// that reports needs no other read of the HASH.
var servedScript = luakeys.NewScript(luakeys.AllowOOMLua + `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local live = {}
for i = 4, #ARGV do live[ARGV[i]] = true end
live[ARGV[1]] = true
local all = redis.call('HGETALL', KEYS[1])
local served = {}
for i = 1, #all, 2 do
  if live[all[i]] then
    served[all[i]] = all[i + 1]
  else
    redis.call('HDEL', KEYS[1], all[i])
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local out = {}
for i = 4, #ARGV do out[#out + 1] = served[ARGV[i]] or false end
return out
`)

// ReportServed records that replica forwards topics, for ttl, and forgets
// the reports of replicas not in live.
func (s *Store) ReportServed(ctx context.Context, prefix, replica string, topics, live []string, ttl time.Duration) error {
	_, err := s.ReportServedAndRead(ctx, prefix, replica, topics, live, ttl)
	return err
}

// ReportServedAndRead is ReportServed that returns who forwards what among
// live (sorted, as a heartbeat returns them) in the same call.
func (s *Store) ReportServedAndRead(ctx context.Context, prefix, replica string, topics, live []string, ttl time.Duration) (Forwarding, error) {
	args := make([]any, 0, 3+len(live))
	args = append(args, replica, strings.Join(topics, ","), max(1, ttl.Milliseconds()))
	for _, id := range live {
		args = append(args, id)
	}
	vals, err := servedScript.Run(ctx, s.rdb, []string{ServedKey(prefix)}, args...).Slice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return Forwarding{}, fmt.Errorf("report the topics %s forwards in %s: %w", replica, ServedKey(prefix), err)
	}
	return forwardingOf(live, vals), nil
}

// ServedBy reads who forwards what among live, the replicas a heartbeat
// just returned (one HMGET: what Forwarding reads after the replica set).
func (s *Store) ServedBy(ctx context.Context, prefix string, live []string) (Forwarding, error) {
	if len(live) == 0 {
		return Forwarding{Live: live, Served: map[string][]string{}}, nil
	}
	vals, err := s.rdb.HMGet(ctx, ServedKey(prefix), live...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return Forwarding{}, fmt.Errorf("read the topics the replicas forward in %s: %w", ServedKey(prefix), err)
	}
	return forwardingOf(live, vals), nil
}

// Beat is what one heartbeat answers ((*Queue).Beat): the live set and who
// forwards what among it.
type Beat struct {
	// Set is the live set the heartbeat wrote and read.
	Set ReplicaSet
	// Forwarding is who forwards what among Set.Live; empty when ReadErr.
	Forwarding Forwarding
	// ReadErr says the reports could not be read, though the heartbeat was
	// written (Set is then valid).
	ReadErr error
}

// Beat is Heartbeat that also reads, in the same round trip (a
// pipeline of the heartbeat script and an HGETALL of ServedKey), who
// forwards what among the live replicas it returns: a daemon sees a report
// appear or change at its next heartbeat at no extra wait. err is the
// heartbeat's; Beat.ReadErr, with err nil, says the reports could not be
// read (Beat.Forwarding is then empty).
func (s *Store) Beat(ctx context.Context, prefix, id string, ttl time.Duration) (Beat, error) {
	key := queue.ReplicasKey(prefix)
	pipe := s.rdb.Pipeline()
	hb := heartbeatScript.EvalSha(ctx, pipe, []string{key}, id, ttl.Milliseconds(), flag(false))
	all := pipe.HGetAll(ctx, ServedKey(prefix))
	_, _ = pipe.Exec(ctx) // errors are read per command below
	res, err := hb.StringSlice()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// Redis lost its scripts (a restart, a failover): a pipeline cannot
		// fall back to EVAL as Script.Run does, and the daemon's ACL grants
		// no SCRIPT LOAD. Run's EVAL caches the script for the next beat;
		// this one reads the reports in a second round trip.
		res, err = heartbeatScript.Run(ctx, s.rdb, []string{key}, id, ttl.Milliseconds(), flag(false)).StringSlice()
		all = s.rdb.HGetAll(ctx, ServedKey(prefix))
	}
	if err != nil {
		return Beat{}, fmt.Errorf("heartbeat %s in %s: %w", id, key, err)
	}
	set, err := parseReplicaSet(key, res)
	if err != nil {
		return Beat{}, fmt.Errorf("heartbeat %s: %w", id, err)
	}
	served, err := all.Result()
	if err != nil {
		return Beat{Set: set, ReadErr: fmt.Errorf("read the topics the replicas forward in %s: %w", ServedKey(prefix), err)}, nil
	}
	vals := make([]any, len(set.Live))
	for i, r := range set.Live {
		if v, ok := served[r]; ok {
			vals[i] = v
		}
	}
	return Beat{Set: set, Forwarding: forwardingOf(set.Live, vals)}, nil
}

// forwardingOf pairs live with their reports (vals[i] is live[i]'s: a
// string, or nil when it has none).
func forwardingOf(live []string, vals []any) Forwarding {
	f := Forwarding{Live: live, Served: map[string][]string{}}
	for i, v := range vals {
		if s, ok := v.(string); ok && i < len(live) {
			f.Served[live[i]] = strings.FieldsFunc(s, func(r rune) bool { return r == ',' })
		}
	}
	return f
}

// Unserve drops replica's report, as it leaves the replica set: the HASH
// goes with the last report, so a stopped deployment leaves no key behind.
func (s *Store) Unserve(ctx context.Context, prefix, replica string) error {
	if err := s.rdb.HDel(ctx, ServedKey(prefix), replica).Err(); err != nil {
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
func (s *Store) Forwarding(ctx context.Context, prefix string) (Forwarding, error) {
	set, err := s.Replicas(ctx, prefix)
	if err != nil {
		return Forwarding{}, err
	}
	return s.ServedBy(ctx, prefix, set.Live)
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

// Unforwarded reports whether topic's messages wait for no one: replicas
// are live and none forwards it (internal/opstext says so to people). With
// no live replica at all it is false: daemons that scan every slot
// (OwnershipAll) do not heartbeat, and a Redis that no daemon serves is
// what `replicas` reports ("no live replicas").
func (f Forwarding) Unforwarded(topic string) bool {
	return len(f.Live) > 0 && len(f.Forwarders(topic)) == 0
}

// CheckForwarded is what a front door asks after scheduling to t: the
// replicas' forwarding, which says whether t's messages wait for no one
// (Forwarding.Unforwarded). Such a topic that is not registered is noted
// (NoteWaiting), so the daemons' gauge of unforwarded messages counts it.
func (s *Store) CheckForwarded(ctx context.Context, t queue.Topic) (Forwarding, error) {
	f, err := s.Forwarding(ctx, t.Prefix)
	if err != nil || !f.Unforwarded(t.Name) {
		return f, err
	}
	if _, ok, err := s.q.Layout(ctx, t.Prefix, t.Name); err != nil {
		return f, err
	} else if !ok {
		return f, s.q.NoteWaiting(ctx, t)
	}
	return f, nil
}

// Assign shares the slots of topic among the live replicas that forward it
// (Forwarders) and returns the owner of each slot (see Assign): a replica
// that does not run topic owns none of them, so none waits for it, and a
// live replica that has not reported counts as forwarding every topic, so
// no slot is left without an owner because a report is missing. The
// daemons scan what this gives them; the CLI and the console show it.
func (f Forwarding) Assign(topic string, slots int) []string {
	return Assign(f.Forwarders(topic), topic, slots)
}

// Owner is Owner among the live replicas that forward topic: who owns a
// stranded slot (beyond the topic's slot count).
func (f Forwarding) Owner(topic string, slot int) string {
	return Owner(f.Forwarders(topic), topic, slot)
}

// Owned returns, for each replica of f.Live (in that order), the slots of
// each topic it owns (f.Assign), or every slot when all (every replica
// scans every slot). A topic a replica does not forward is absent from its
// map; one it forwards but owns nothing of maps to an empty list, never nil.
// The daemons compute the same from the same reports.
func (f Forwarding) Owned(topics []queue.Topic, all bool) []map[string][]int {
	owned := make([]map[string][]int, len(f.Live))
	for i := range owned {
		owned[i] = make(map[string][]int, len(topics))
	}
	for _, t := range topics {
		owners := f.Assign(t.Name, t.SlotCount())
		for i, id := range f.Live {
			if !f.Forwards(id, t.Name) {
				continue
			}
			slots := []int{}
			for slot, owner := range owners {
				if all || owner == id {
					slots = append(slots, slot)
				}
			}
			owned[i][t.Name] = slots
		}
	}
	return owned
}
