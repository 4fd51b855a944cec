package queue

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// A key of a fair topic may have a rate: the most deliveries per second of
// its messages, summed over every replica. Each slot keeps a token bucket
// per key in SlotKeys.FairLimits ("b:<key>", while the key has messages)
// and gives the key rate / slots (its messages spread over the slots by
// id), with a burst of one second's worth (at least one message). The
// fair claim takes no more of a key than its tokens allow and puts a key
// without one in waiting until its next token falls due, so a key held by
// its rate holds only that key. The rate is the topic's KeyRateLimit
// (DELAYBRIDGE_TOPIC_<NAME>_KEY_RATE_LIMIT), or the key's own set at run
// time (SetKeyRate, "r:<key>" in every slot), which wins.

// maxKeyRate bounds a key's rate like the topic's (config's RATE_LIMIT).
const maxKeyRate = 10_000_000

// setKeyRateScript sets (ARGV[2] a rate, "0": none) or clears (ARGV[2]
// "") one key's run-time rate in one slot.
//
// KEYS    -> slotKeys
// ARGV[1] -> the key
// ARGV[2] -> the rate per second, "0" for none, "" to clear
//
// Returns 1.
var setKeyRateScript = slotScript(`
if ARGV[2] == '' then
  redis.call('HDEL', flimits, 'r:' .. ARGV[1])
else
  redis.call('HSET', flimits, 'r:' .. ARGV[1], ARGV[2])
end
return 1
`)

// SetKeyRate sets key's rate on fair topic t at run time, in every slot:
// rate > 0 deliveries per second over every replica, 0 for no limit (over
// the topic's KeyRateLimit). ClearKeyRate returns the key to the topic's.
func (q *Queue) SetKeyRate(ctx context.Context, t Topic, key string, rate float64) error {
	if err := checkKeyOp(t, key); err != nil {
		return err
	}
	if math.IsNaN(rate) || rate < 0 || rate > maxKeyRate || (rate > 0 && rate < 0.001) {
		return fmt.Errorf("topic %s: key %q: rate %v: %w", t.Name, key, rate, ErrBadKeyRate)
	}
	v := strconv.FormatFloat(rate, 'f', -1, 64)
	return q.eachSlot(ctx, t, "set key rate", func(s int) error {
		return setKeyRateScript.Run(ctx, q.rdb, slotKeys(t.Keys(s)), key, v).Err()
	})
}

// ErrBadKeyRate: a key's rate is not 0 (none) or a decimal between 0.001
// and 10,000,000 deliveries per second.
var ErrBadKeyRate = fmt.Errorf("a key's rate is deliveries per second, from 0.001 to %d, or 0 for none", maxKeyRate)

// ClearKeyRate removes key's run-time rate on fair topic t: the topic's
// KeyRateLimit applies again.
func (q *Queue) ClearKeyRate(ctx context.Context, t Topic, key string) error {
	if err := checkKeyOp(t, key); err != nil {
		return err
	}
	return q.eachSlot(ctx, t, "clear key rate", func(s int) error {
		return setKeyRateScript.Run(ctx, q.rdb, slotKeys(t.Keys(s)), key, "").Err()
	})
}

// KeyRate is one key's rate set at run time.
type KeyRate struct {
	Key  string  `json:"key"`
	Rate float64 `json:"rate"` // deliveries per second; 0: no limit
}

// KeyRates lists the keys of fair topic t with a rate set at run time, by
// key (SetKeyRate sets every slot, so slot 0 says it; an HSCAN of its
// limits, whose buckets it skips).
func (q *Queue) KeyRates(ctx context.Context, t Topic) ([]KeyRate, error) {
	if !t.Fair {
		return nil, nil
	}
	var out []KeyRate
	iter := q.rdb.HScan(ctx, t.Keys(0).FairLimits, 0, "r:*", 1000).Iterator()
	for iter.Next(ctx) {
		field := iter.Val()
		if !iter.Next(ctx) {
			break
		}
		key, ok := strings.CutPrefix(field, "r:")
		r, err := strconv.ParseFloat(iter.Val(), 64)
		if ok && err == nil {
			out = append(out, KeyRate{Key: key, Rate: r})
		}
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("read key rates of %s: %w", t.Name, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
