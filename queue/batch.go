package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Item is one message of a ScheduleBatch.
type Item struct {
	Message Message
	When    When
}

// batchChunk bounds how many commands one pipeline carries.
const batchChunk = 1000

// ScheduleBatch schedules many messages of t through pipelines (one round
// trip per thousand). Every item is validated before anything is written: an
// invalid one fails the whole call, naming its index. Items are applied in
// order, so a later item with the same member or id wins. Each slot gets one
// wake-up, for its earliest item.
//
// When Redis fails part way, the error says how many items failed and the
// receipts of the rest are filled in; scheduling is idempotent (the same
// member or id replaces itself), so retrying the whole batch is safe.
func (q *Queue) ScheduleBatch(ctx context.Context, t Topic, items []Item) ([]Receipt, error) {
	calls := make([]scriptCall, len(items))
	receipts := make([]Receipt, len(items))
	earliest := map[int]int{} // slot -> index of its earliest item
	now := time.Now()
	var bad []error
	for i, it := range items {
		member, err := t.Encode(it.Message)
		if err == nil {
			calls[i], receipts[i], err = t.scheduleCall(member, it.When, false)
		}
		if err != nil {
			bad = append(bad, fmt.Errorf("item %d: %w", i, err))
			continue
		}
		slot := receipts[i].Slot
		if j, ok := earliest[slot]; !ok || it.When.estimate(now).Before(items[j].When.estimate(now)) {
			earliest[slot] = i
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("schedule batch in %s: %w", t.Name, errors.Join(bad...))
	}
	if err := q.checkLayout(ctx, t); err != nil {
		return nil, fmt.Errorf("schedule batch: %w", err)
	}
	for slot, i := range earliest {
		calls[i].args[4], calls[i].args[5] = t.wakeArgs(slot)
	}
	cmds, err := q.evalAll(ctx, scheduleScript, calls)
	if err != nil {
		return nil, fmt.Errorf("schedule batch in %s: %w", t.Name, err)
	}
	var failed []error
	for i, c := range cmds {
		res, err := c.Slice()
		err = dueErr(err)
		if err == nil {
			err = receipts[i].fill(res)
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("item %d: %w", i, err))
			receipts[i] = Receipt{}
		}
	}
	if len(failed) > 0 {
		return receipts, fmt.Errorf("schedule batch in %s: %d of %d items failed: %w", t.Name, len(failed), len(items), errors.Join(failed...))
	}
	return receipts, nil
}

// scriptCall is one script invocation.
type scriptCall struct {
	keys []string
	args []any
}

// evalAll runs one script per call through pipelines of EVALSHA, loading the
// script once if Redis does not know it yet (a pipeline cannot fall back to
// EVAL per command as Script.Run does). Each command carries its own error.
func (q *Queue) evalAll(ctx context.Context, s *redis.Script, calls []scriptCall) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(calls))
	pending := make([]int, len(calls))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 0; len(pending) > 0; attempt++ {
		for start := 0; start < len(pending); start += batchChunk {
			end := min(start+batchChunk, len(pending))
			pipe := q.rdb.Pipeline()
			for _, i := range pending[start:end] {
				cmds[i] = s.EvalSha(ctx, pipe, calls[i].keys, calls[i].args...)
			}
			_, _ = pipe.Exec(ctx) // errors are read per command below
		}
		var missing []int
		for _, i := range pending {
			if err := cmds[i].Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
				missing = append(missing, i)
			}
		}
		if len(missing) == 0 || attempt > 0 {
			break
		}
		if err := s.Load(ctx, q.rdb).Err(); err != nil {
			return nil, fmt.Errorf("load script: %w", err)
		}
		pending = missing
	}
	return cmds, nil
}
