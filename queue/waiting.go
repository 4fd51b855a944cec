package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
)

// A producer may schedule to a topic that only its own environment
// configures: no daemon registered it, and none forwards it. The registry
// does not list it, so neither the daemons' unforwarded gauge nor `topics`
// would know it exists. A front door that schedules to a topic no live
// replica forwards, and that is not registered, therefore notes its layout
// here (NoteWaiting); the daemons count its due messages like a registered
// topic's and drop the note once it is registered (ForgetWaiting). It is a
// note, not a registration: it changes no daemon's layout checks.

// WaitingKey is the HASH topic → layout (as the registry encodes it) of
// topics scheduled to while no daemon registered them.
func WaitingKey(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + ":topics:waiting"
}

// NoteWaiting notes that messages were scheduled to t while no daemon
// registered it (a first note stays).
func (q *Queue) NoteWaiting(ctx context.Context, t Topic) error {
	doc, err := json.Marshal(LayoutOf(t))
	if err != nil {
		return fmt.Errorf("note waiting topic %s: %w", t.Name, err)
	}
	if err := q.rdb.HSetNX(ctx, WaitingKey(t.Prefix), t.Name, doc).Err(); err != nil {
		return fmt.Errorf("note waiting topic %s in %s: %w", t.Name, WaitingKey(t.Prefix), err)
	}
	return nil
}

// Waiting are the topics noted by NoteWaiting under prefix, sorted by name.
func (q *Queue) Waiting(ctx context.Context, prefix string) ([]Layout, error) {
	key := WaitingKey(prefix)
	all, err := q.hashAll(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read waiting topics %s: %w", key, err)
	}
	out := make([]Layout, 0, len(all))
	for name, doc := range all {
		l, err := decodeLayout(name, doc)
		if err != nil || CheckTopicName(name) != nil {
			continue // a note is advice: a bad one is skipped
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ForgetWaiting drops the notes of names (registered now).
func (q *Queue) ForgetWaiting(ctx context.Context, prefix string, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	if err := q.rdb.HDel(ctx, WaitingKey(prefix), names...).Err(); err != nil {
		return fmt.Errorf("forget waiting topics in %s: %w", WaitingKey(prefix), err)
	}
	return nil
}

// hashAll reads a whole (small) HASH with HSCAN rather than HGETALL: the
// daemon's documented ACL grants HSCAN, and the registry and the waiting
// notes are read by the daemon (the unforwarded gauge) as well as the CLI.
func (q *Queue) hashAll(ctx context.Context, key string) (map[string]string, error) {
	out := map[string]string{}
	var cursor uint64
	for {
		kv, next, err := q.rdb.HScan(ctx, key, cursor, "", 1000).Result()
		if err != nil {
			return nil, err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}
