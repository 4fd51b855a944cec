package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Queue runs the data model's operations against one Redis deployment
// (standalone, Sentinel or Cluster: every call touches one hash tag).
type Queue struct {
	rdb redis.UniversalClient
}

// New returns a Queue over rdb.
func New(rdb redis.UniversalClient) *Queue { return &Queue{rdb: rdb} }

// Client is the underlying Redis client.
func (q *Queue) Client() redis.UniversalClient { return q.rdb }

// Claimed is one member taken by Claim.
type Claimed struct {
	Member string
	// Due is the time the producer asked for, in Unix milliseconds (a score
	// may carry a fraction).
	Due float64
	// Attempts is how many publishes of this member failed before.
	Attempts int
}

// DueTime is Due as a time.Time.
func (c Claimed) DueTime() time.Time { return MillisTime(c.Due) }

// Claim is the result of one claim call.
type Claim struct {
	// Now is Redis's TIME when the claim ran.
	Now time.Time
	// Next is the lowest score left in the scheduled set, valid when HasNext.
	Next    float64
	HasNext bool
	// Messages are in score order.
	Messages []Claimed
}

// Claim moves up to limit due members of one slot to the in-flight set with a
// lease, in score order.
func (q *Queue) Claim(ctx context.Context, t Topic, slot, limit int, lease time.Duration) (Claim, error) {
	k := t.Keys(slot)
	res, err := claimScript.Run(ctx, q.rdb,
		[]string{k.Scheduled, k.Inflight, k.Due, k.Attempts, k.Dead, k.DeadReason, k.IDs},
		limit, lease.Milliseconds(), flag(t.envelope())).StringSlice()
	if err != nil {
		return Claim{}, fmt.Errorf("claim %s: %w", k.Scheduled, err)
	}
	if len(res) < 2 || (len(res)-2)%3 != 0 {
		return Claim{}, fmt.Errorf("claim %s: malformed reply of %d elements", k.Scheduled, len(res))
	}
	now, err := strconv.ParseFloat(res[0], 64)
	if err != nil {
		return Claim{}, fmt.Errorf("claim %s: parse now %q: %w", k.Scheduled, res[0], err)
	}
	c := Claim{Now: MillisTime(now)}
	if res[1] != "" {
		if c.Next, err = strconv.ParseFloat(res[1], 64); err != nil {
			return Claim{}, fmt.Errorf("claim %s: parse next %q: %w", k.Scheduled, res[1], err)
		}
		c.HasNext = true
	}
	if n := (len(res) - 2) / 3; n > 0 {
		c.Messages = make([]Claimed, n)
	}
	for i := range c.Messages {
		j := 2 + 3*i
		due, err := strconv.ParseFloat(res[j+1], 64)
		if err != nil {
			return Claim{}, fmt.Errorf("claim %s: parse due %q: %w", k.Scheduled, res[j+1], err)
		}
		att, err := strconv.Atoi(res[j+2])
		if err != nil {
			return Claim{}, fmt.Errorf("claim %s: parse attempts %q: %w", k.Scheduled, res[j+2], err)
		}
		c.Messages[i] = Claimed{Member: res[j], Due: due, Attempts: att}
	}
	return c, nil
}

// Ack forgets members the broker confirmed and returns how many were still in
// flight. On envelope topics their ids leave the ids index.
func (q *Queue) Ack(ctx context.Context, t Topic, slot int, members []string) (int, error) {
	if len(members) == 0 {
		return 0, nil
	}
	k := t.Keys(slot)
	args := make([]any, 0, 2*len(members))
	for _, m := range members {
		args = append(args, m, t.unmapID(m))
	}
	n, err := ackScript.Run(ctx, q.rdb, []string{k.Inflight, k.Due, k.Attempts, k.Scheduled, k.IDs}, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("ack %d in %s: %w", len(members), k.Inflight, err)
	}
	return n, nil
}

// Release returns claimed members to the scheduled set at their original due
// time without counting an attempt, and returns how many were still in flight.
func (q *Queue) Release(ctx context.Context, t Topic, slot int, members []string) (int, error) {
	if len(members) == 0 {
		return 0, nil
	}
	k := t.Keys(slot)
	n, err := releaseScript.Run(ctx, q.rdb, []string{k.Scheduled, k.Inflight, k.Due}, toArgs(members)...).Int()
	if err != nil {
		return 0, fmt.Errorf("release %d in %s: %w", len(members), k.Inflight, err)
	}
	return n, nil
}

// Outcome is what Retry did with a member.
type Outcome int

const (
	// NotInflight: the member was no longer in flight; nothing changed.
	NotInflight Outcome = iota
	// Retrying: the member waits in the scheduled set for another attempt.
	Retrying
	// Dead: the member was moved to the dead set with the reason.
	Dead
)

func (o Outcome) String() string {
	switch o {
	case Retrying:
		return "retrying"
	case Dead:
		return "dead"
	default:
		return "not-inflight"
	}
}

// Failure describes one failed publish for Retry.
type Failure struct {
	Member string
	// Backoff is how long to wait before the next attempt.
	Backoff time.Duration
	// Permanent failures dead-letter at once.
	Permanent bool
	// Reason is kept in the dead set's reason hash.
	Reason string
}

// Retry counts a failed attempt of a member still in flight: below
// maxAttempts it goes back to the scheduled set after the back-off, else (or
// when permanent) to the dead set with the reason.
func (q *Queue) Retry(ctx context.Context, t Topic, slot int, f Failure, maxAttempts int) (Outcome, error) {
	k := t.Keys(slot)
	permanent := "0"
	if f.Permanent {
		permanent = "1"
	}
	n, err := retryScript.Run(ctx, q.rdb,
		[]string{k.Scheduled, k.Inflight, k.Due, k.Attempts, k.Dead, k.DeadReason, k.IDs},
		f.Member, f.Backoff.Milliseconds(), maxAttempts, permanent, f.Reason, t.unmapID(f.Member)).Int()
	if err != nil {
		return NotInflight, fmt.Errorf("retry in %s: %w", k.Inflight, err)
	}
	switch {
	case n < 0:
		return NotInflight, nil
	case n == 0:
		return Dead, nil
	default:
		return Retrying, nil
	}
}

// ReapResult is what one Reap call did.
type ReapResult struct {
	Reaped int    // expired leases returned to the scheduled set
	Cursor string // sweep cursor for the next call ("0": sweep finished)
	Swept  int    // stale :due/:attempts records (and :ids entries) dropped
	Dead   int    // members with a +inf score dead-lettered
}

// idsCursor marks a sweep cursor that is in its second phase, over the :ids
// HASH of an envelope topic.
const idsCursor = "ids:"

// Reap returns up to limit expired leases of one slot to the scheduled set and
// advances the sweep of stale records from cursor ("0" to start). The sweep
// walks the :due HASH and then, on envelope topics, the :ids HASH; the cursor
// it returns is opaque and "0" once both are done.
func (q *Queue) Reap(ctx context.Context, t Topic, slot, limit int, cursor string) (ReapResult, error) {
	k := t.Keys(slot)
	phase := "due"
	if cursor == "" {
		cursor = "0"
	}
	if rest, ok := strings.CutPrefix(cursor, idsCursor); ok {
		phase, cursor = "ids", rest
	}
	res, err := reapScript.Run(ctx, q.rdb,
		[]string{k.Scheduled, k.Inflight, k.Due, k.Attempts, k.Dead, k.DeadReason, k.IDs},
		limit, cursor, phase, flag(t.envelope())).Slice()
	if err != nil {
		return ReapResult{}, fmt.Errorf("reap %s: %w", k.Inflight, err)
	}
	if len(res) != 4 {
		return ReapResult{}, fmt.Errorf("reap %s: malformed reply of %d elements", k.Inflight, len(res))
	}
	r := ReapResult{}
	r.Reaped, _ = toInt(res[0])
	r.Cursor, _ = res[1].(string)
	r.Swept, _ = toInt(res[2])
	r.Dead, _ = toInt(res[3])
	switch {
	case phase == "due" && r.Cursor == "0" && t.envelope():
		r.Cursor = idsCursor + "0"
	case phase == "ids" && r.Cursor != "0":
		r.Cursor = idsCursor + r.Cursor
	}
	return r, nil
}

// flag is a boolean script argument.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func toInt(v any) (int, bool) {
	n, ok := v.(int64)
	return int(n), ok
}

func toArgs(ss []string) []any {
	args := make([]any, len(ss))
	for i, s := range ss {
		args[i] = s
	}
	return args
}

// ErrBadDueTime reports a due time that cannot be honoured exactly.
var ErrBadDueTime = errors.New("due time cannot be honoured")

// Score converts a due time to a ZSET score in Unix milliseconds. It refuses
// times before 1970 and times whose millisecond a float64 cannot hold exactly
// (rounding could deliver them early).
func Score(due time.Time) (float64, error) {
	ms := due.UnixMilli()
	if due.Before(time.Unix(0, 0)) {
		return 0, fmt.Errorf("%w: %s is before 1970", ErrBadDueTime, due.UTC().Format(time.RFC3339Nano))
	}
	if due.Sub(time.UnixMilli(ms)) > 0 {
		ms++ // a due time inside a millisecond is honoured from its next one
	}
	f := float64(ms)
	if int64(f) != ms || f > 1<<53 {
		return 0, fmt.Errorf("%w: %d ms cannot be held exactly by a float64 score", ErrBadDueTime, ms)
	}
	return f, nil
}

// MillisTime converts a score in Unix milliseconds to a time. Whole
// milliseconds convert exactly (a due header never shifts by one).
func MillisTime(ms float64) time.Time {
	if math.IsInf(ms, 0) || math.IsNaN(ms) || math.Abs(ms) > 1<<62 {
		return time.Time{}
	}
	whole := math.Floor(ms)
	frac := time.Duration((ms - whole) * float64(time.Millisecond))
	return time.UnixMilli(int64(whole)).Add(frac)
}
