package queue

import (
	"context"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"
)

// KeyCount is one key of a fair topic and how many of its messages are
// scheduled (waiting, due or not), summed over the topic's slots.
type KeyCount struct {
	Key   string `json:"key"`
	Count int64  `json:"count"`
}

// TopKeys returns up to n keys of fair topic t with the most messages
// scheduled, most first (ties by key), and how many distinct key entries
// the slots' count sets hold in all (a key with messages in several slots
// counts once per slot). It reads each slot's count set (SlotKeys.FairCount,
// see fair.go): the top n of each slot (ZREVRANGE), then the candidates'
// counts in every slot (ZMSCORE), so its work grows with slots × n, never
// with the number of keys. A key in no slot's top n is not a candidate.
func (q *Queue) TopKeys(ctx context.Context, t Topic, n int) ([]KeyCount, int64, error) {
	if !t.Fair {
		return nil, 0, fmt.Errorf("topic %s is not fair: it keeps no counts per key", t.Name)
	}
	if n <= 0 {
		return nil, 0, nil
	}
	slots := t.SlotCount()
	pipe := q.rdb.Pipeline()
	tops, cards := make([]*redis.StringSliceCmd, slots), make([]*redis.IntCmd, slots)
	for slot := range slots {
		tops[slot] = pipe.ZRevRange(ctx, t.Keys(slot).FairCount, 0, int64(n-1))
		cards[slot] = pipe.ZCard(ctx, t.Keys(slot).FairCount)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("top keys of %s: %w", t.Name, err)
	}
	var cand []string
	seen := map[string]bool{}
	var entries int64
	for slot := range slots {
		for _, k := range tops[slot].Val() {
			if !seen[k] {
				seen[k] = true
				cand = append(cand, k)
			}
		}
		entries += cards[slot].Val()
	}
	if len(cand) == 0 {
		return nil, entries, nil
	}
	pipe = q.rdb.Pipeline()
	scores := make([]*redis.FloatSliceCmd, slots)
	for slot := range slots {
		scores[slot] = pipe.ZMScore(ctx, t.Keys(slot).FairCount, cand...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("counts of top keys of %s: %w", t.Name, err)
	}
	out := make([]KeyCount, len(cand))
	for i, k := range cand {
		out[i].Key = k
	}
	for _, c := range scores {
		for i, s := range c.Val() {
			out[i].Count += int64(s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Key < out[j].Key
	})
	return out[:min(n, len(out))], entries, nil
}
