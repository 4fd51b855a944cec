package flowstate

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/luakeys"
	"github.com/delaybridge/delaybridge/queue"
)

// Limits set at run time (delaybridge limit) override a topic's
// environment until cleared. They live in the topic-wide limits HASH
// (FlowKeys.Limits), beside the slots' paused keys, and every replica reads
// them every second (see LimitsOf): fields rate (permits per second, "0":
// no rate limit), hold_above (ready messages, "-1": no hold) and since (ms,
// Redis's clock). A field that is absent leaves the environment's value.

// Override is a topic's limits set at run time. A nil field leaves the
// environment's value in force.
type Override struct {
	// Rate is deliveries per second over every replica; 0 means none.
	Rate *float64
	// HoldAbove is the destination queue's ready count above which the
	// topic holds; negative means no hold.
	HoldAbove *int
	// Since is when the override was last set (Redis's clock).
	Since time.Time
}

// IsZero reports whether nothing is overridden.
func (o Override) IsZero() bool { return o.Rate == nil && o.HoldAbove == nil }

// setLimitsScript writes a topic's run-time limits.
//
// KEYS[1] -> FlowKeys.Limits
// ARGV    -> field, value, … ("" value: delete that field)
//
// Stamps since with Redis's now; deletes the key when no limit field is left.
// Returns 1.
var setLimitsScript = luakeys.NewScript(nowLua + `
for i = 1, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    redis.call('HDEL', KEYS[1], ARGV[i])
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
if redis.call('HEXISTS', KEYS[1], 'rate') == 0 and redis.call('HEXISTS', KEYS[1], 'hold_above') == 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('HSET', KEYS[1], 'since', string.format('%.0f', now))
end
return 1
`)

// SetLimits overrides t's limits on every replica within a second: the
// fields of o that are set replace the stored ones, the others are kept.
func (s *Store) SetLimits(ctx context.Context, t queue.Topic, o Override) error {
	var args []any
	if o.Rate != nil {
		args = append(args, "rate", strconv.FormatFloat(max(0, *o.Rate), 'f', -1, 64))
	}
	if o.HoldAbove != nil {
		args = append(args, "hold_above", strconv.Itoa(max(-1, *o.HoldAbove)))
	}
	if len(args) == 0 {
		return nil
	}
	if err := setLimitsScript.Run(ctx, s.rdb, []string{t.FlowKeys().Limits}, args...).Err(); err != nil {
		return fmt.Errorf("set limits of %s: %w", t.Name, err)
	}
	return nil
}

// ClearLimits removes t's run-time limits: the environment's apply again.
// It reports whether there were any.
func (s *Store) ClearLimits(ctx context.Context, t queue.Topic) (bool, error) {
	n, err := s.rdb.Del(ctx, t.FlowKeys().Limits).Result()
	if err != nil {
		return false, fmt.Errorf("clear limits of %s: %w", t.Name, err)
	}
	return n > 0, nil
}

// LimitsOf reads the run-time limits of every topic of ts, in one pipeline
// (one round trip per node of a Redis Cluster).
func (s *Store) LimitsOf(ctx context.Context, ts []queue.Topic) ([]Override, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ts))
	for i, t := range ts {
		cmds[i] = pipe.HMGet(ctx, t.FlowKeys().Limits, "rate", "hold_above", "since")
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("read run-time limits: %w", err)
	}
	out := make([]Override, len(ts))
	for i, c := range cmds {
		out[i] = parseOverride(c.Val())
	}
	return out, nil
}

// Limits reads t's run-time limits.
func (s *Store) Limits(ctx context.Context, t queue.Topic) (Override, error) {
	o, err := s.LimitsOf(ctx, []queue.Topic{t})
	if err != nil {
		return Override{}, err
	}
	return o[0], nil
}

func parseOverride(v []any) Override {
	var o Override
	str := func(i int) string {
		if i < len(v) {
			s, _ := v[i].(string)
			return s
		}
		return ""
	}
	if r, err := strconv.ParseFloat(str(0), 64); err == nil && r >= 0 {
		o.Rate = &r
	}
	if h, err := strconv.Atoi(str(1)); err == nil {
		o.HoldAbove = &h
	}
	if ms, err := strconv.ParseFloat(str(2), 64); err == nil {
		o.Since = queue.MillisTime(ms)
	}
	return o
}

// Effective returns the limits in force: o's where set, else the
// environment's rate (0: none) and holdAbove (negative: none).
func (o Override) Effective(rate float64, holdAbove int) (float64, int) {
	if o.Rate != nil {
		rate = *o.Rate
	}
	if o.HoldAbove != nil {
		holdAbove = *o.HoldAbove
	}
	return rate, holdAbove
}
