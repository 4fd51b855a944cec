package queue

import (
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Test helpers that read the id index of envelope topics in both layouts
// (see idsLua): the ids HASH (id -> member) and the index's buckets (id ->
// score of a canonical member).

// idBucket mirrors bucket in idsLua: the index HASH that holds id.
func idBucket(k SlotKeys, id string) string {
	h := 0
	for i := 0; i < len(id); i++ {
		h = (h*31 + int(id[i])) % 1000003
	}
	return k.Index + ":" + strconv.Itoa(h%idBuckets)
}

// canonicalPrefix mirrors needle in idsLua: the bytes a canonical member of
// id starts with, "" when id holds a character JSON escapes.
func canonicalPrefix(id string) string {
	if strings.ContainsAny(id, `"\`) {
		return ""
	}
	return `{"id":"` + id + `"`
}

// indexEntries reads the index's buckets of a slot: id -> score.
func (f *fixture) indexEntries(slot int) map[string]string {
	f.t.Helper()
	k := f.tp.Keys(slot)
	out := map[string]string{}
	for b := range idBuckets {
		key := k.Index + ":" + strconv.Itoa(b)
		h, err := f.rdb.HGetAll(f.ctx, key).Result()
		if err != nil {
			f.t.Fatalf("HGETALL %s: %v", key, err)
		}
		for id, s := range h {
			if idBucket(k, id) != key {
				f.t.Errorf("id %q is in bucket %s, want %s", id, key, idBucket(k, id))
			}
			out[id] = s
		}
	}
	return out
}

// named reads what every id of a slot names, in both layouts: the member, or
// "stale index entry at <score>" when an index entry finds none.
func (f *fixture) named(slot int) map[string]string {
	f.t.Helper()
	k := f.tp.Keys(slot)
	out, err := f.rdb.HGetAll(f.ctx, k.IDs).Result()
	if err != nil {
		f.t.Fatalf("HGETALL %s: %v", k.IDs, err)
	}
	inflight, _ := f.rdb.ZRange(f.ctx, k.Inflight, 0, -1).Result()
	for id, s := range f.indexEntries(slot) {
		if m, ok := out[id]; ok {
			f.t.Errorf("id %q is in both layouts: %s and score %s", id, m, s)
		}
		out[id] = "stale index entry at " + s
		p := canonicalPrefix(id)
		at, _ := f.rdb.ZRangeByScore(f.ctx, k.Scheduled, &redis.ZRangeBy{Min: s, Max: s}).Result()
		for _, m := range append(at, inflight...) {
			if p != "" && strings.HasPrefix(m, p) {
				out[id] = m
				break
			}
		}
	}
	return out
}

// idNames is what id names in slot, in either layout.
func (f *fixture) idNames(slot int, id string) (string, bool) {
	f.t.Helper()
	m, ok := f.named(slot)[id]
	return m, ok
}
