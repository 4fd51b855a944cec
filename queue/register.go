package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/delaybridge/delaybridge/internal/luakeys"
)

// Change is one layout Register wrote.
type Change struct {
	// Old is what the registry held; valid when Replaced.
	Old      Layout
	Replaced bool
	New      Layout
}

// liveScript lists the live replicas other than one.
//
// KEYS[1] -> replicas ZSET (id → heartbeat deadline, ms)
// ARGV[1] -> the id to leave out
//
// Returns the ids whose deadline is after Redis's TIME. It writes nothing:
// expired entries are the heartbeat's to drop.
var liveScript = luakeys.NewScript(nowLua + `
local out = {}
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. string.format('%.0f', now), '+inf')
for i = 1, #live do
  if live[i] ~= ARGV[1] then out[#out + 1] = live[i] end
end
return out
`)

// LiveReplicas are the replicas of prefix other than self whose heartbeat
// deadline is still ahead, by Redis's clock.
func (q *Queue) LiveReplicas(ctx context.Context, prefix, self string) ([]string, error) {
	key := ReplicasKey(prefix)
	ids, err := liveScript.Run(ctx, q.rdb, []string{key}, self).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("list live replicas in %s: %w", key, err)
	}
	return ids, nil
}

// Register records the layouts of the topics daemon replica self forwards
// in the registry of prefix and returns what it changed (new topics, and
// layouts it replaced). Topics it is not given are left alone.
//
// A layout that differs from the registered one while another replica is
// live (its heartbeat deadline is ahead) is refused, and nothing is written:
// the error wraps ErrLayoutMismatch and names both layouts and the live
// replicas. Two replicas forwarding one topic by different layouts would
// each leave the other's messages unscanned or deliver them elsewhere. With
// no live replica the new layout replaces the old: the caller reports each
// Change with Replaced.
//
// The check and the write are two steps (on a Redis Cluster the replica set
// and the registry may live on different nodes): two replicas started at the
// same instant, with different layouts, into an empty replica set, can both
// pass; the one that writes last is what the registry shows.
//
// A name outside TopicNameRule is refused (ErrBadTopicName).
func (q *Queue) Register(ctx context.Context, prefix, self string, layouts []Layout) ([]Change, error) {
	key := TopicsKey(prefix)
	for _, l := range layouts {
		if err := CheckTopicName(l.Name); err != nil {
			return nil, fmt.Errorf("register in %s: %w", key, err)
		}
	}
	changes, err := q.layoutChanges(ctx, key, layouts)
	if err != nil || len(changes) == 0 {
		return nil, err
	}
	var conflicts []string
	for _, c := range changes {
		if c.Replaced {
			conflicts = append(conflicts, fmt.Sprintf("topic %s: registered (%s), configured (%s)", c.New.Name, c.Old, c.New))
		}
	}
	if len(conflicts) > 0 {
		live, err := q.LiveReplicas(ctx, prefix, self)
		if err != nil {
			return nil, err
		}
		if len(live) > 0 {
			return nil, fmt.Errorf("register in %s: %s; live replicas %s forward by the registered layout: %w: "+
				"keep the registered settings, or stop every replica and start them again with the new ones "+
				"(the first to start takes the registry over; `delaybridge topics` shows it)",
				key, strings.Join(conflicts, "; "), strings.Join(live, ", "), ErrLayoutMismatch)
		}
	}
	args := make([]any, 0, 2*len(changes))
	for _, c := range changes {
		doc, err := json.Marshal(c.New)
		if err != nil {
			return nil, fmt.Errorf("register %s in %s: %w", c.New.Name, key, err)
		}
		args = append(args, c.New.Name, string(doc))
	}
	if err := q.rdb.HSet(ctx, key, args...).Err(); err != nil {
		return nil, fmt.Errorf("register in %s: %w", key, full(err))
	}
	return changes, nil
}

// layoutChanges compares layouts with the registry: the new ones and those
// that differ.
func (q *Queue) layoutChanges(ctx context.Context, key string, layouts []Layout) ([]Change, error) {
	if len(layouts) == 0 {
		return nil, nil
	}
	names := make([]string, len(layouts))
	for i, l := range layouts {
		names[i] = l.Name
	}
	docs, err := q.rdb.HMGet(ctx, key, names...).Result()
	if err != nil {
		return nil, fmt.Errorf("load registry %s: %w", key, err)
	}
	var changes []Change
	for i, l := range layouts {
		l.Version = LayoutVersion
		doc, ok := docs[i].(string)
		if !ok {
			changes = append(changes, Change{New: l})
			continue
		}
		old, err := decodeLayout(l.Name, doc)
		if err != nil {
			return nil, fmt.Errorf("load registry %s: %w", key, err)
		}
		switch {
		case !old.Same(l):
			changes = append(changes, Change{Old: old, Replaced: true, New: l})
		case old.DedupMs != l.DedupMs, old.Fair != l.Fair:
			// Not a conflict: the entry takes the new window, or fair share
			// turned on or off.
			changes = append(changes, Change{Old: old, New: l})
		}
	}
	return changes, nil
}
