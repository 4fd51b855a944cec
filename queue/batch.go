package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Item is one message of a ScheduleBatch or ScheduleEach.
type Item struct {
	Message Message
	When    When
}

// batchChunk bounds how many script calls one pipeline carries.
const batchChunk = 1000

// slotBatchMax bounds the items one call of scheduleBatchScript writes, so
// that one call holds Redis about as long as a claim of as many messages.
const slotBatchMax = 256

// scheduleBatchScript schedules many members of one slot, each as
// scheduleScript would (see putLua), in order: a later item with the same
// member or id replaces an earlier one. One TIME serves every "in" item. A
// due time that cannot be honoured refuses that item alone. The call wakes
// the slot once, for the earliest score it wrote.
//
// KEYS            -> slotKeys
// ARGV[1]         -> wake channel ("" publishes nothing)
// ARGV[2]         -> wake payload before the score ("<topic>\n<slot>\n")
// ARGV[3]         -> "1": the topic has a dedup window (see putLua)
// ARGV[4+4k]      -> member k
// ARGV[5+4k]      -> envelope id of member k ("" for a raw member)
// ARGV[6+4k]      -> "at" or "in"
// ARGV[7+4k]      -> score (ms) for "at", delay (ms) from Redis's TIME for "in"
//
// Returns one {score, replaced} per member (replaced 3: a duplicate, not
// written), or {bad score, -1} for a member refused.
var scheduleBatchScript = growScript(nowLua, scoreLua, idsLua, forgetLua, putLua, `
local out, first, firstn = {}, nil, nil
for i = 4, #ARGV, 4 do
  local score, bad = score_of(ARGV[i + 2], ARGV[i + 3])
  if score then
    local r = put(ARGV[i], ARGV[i + 1], score, ARGV[3])
    out[#out + 1] = {score, r}
    local n = tonumber(score)
    if r ~= 3 and (not firstn or n < firstn) then first, firstn = score, n end
  else
    out[#out + 1] = {bad, -1}
  end
end
if first then wake(ARGV[1], ARGV[2], first) end
return out
`)

// ScheduleBatch schedules many messages of t (see ScheduleEach for how they
// travel). Every item is validated before anything is written: an invalid
// one fails the whole call, naming its index.
//
// When Redis fails or refuses part of the batch, the error says how many
// items failed and the receipts of the rest are filled in; scheduling is
// idempotent (the same member or id replaces itself), so retrying the whole
// batch is safe.
func (q *Queue) ScheduleBatch(ctx context.Context, t Topic, items []Item) ([]Receipt, error) {
	if t.envelope() {
		items = withTraceItems(ctx, items)
	}
	puts, errs := t.prepare(items, false)
	if err := indexed(errs); err != nil {
		return nil, fmt.Errorf("schedule batch in %s: %w", t.Name, err)
	}
	// Every item is valid: an error from here on is Redis's.
	receipts := make([]Receipt, len(items))
	q.write(ctx, t, puts, receipts, errs)
	if err := indexed(errs); err != nil {
		return receipts, fmt.Errorf("schedule batch in %s: %d of %d items failed: %w", t.Name, count(errs), len(items), err)
	}
	return receipts, nil
}

// ScheduleEach schedules many messages of t, each on its own account:
// errs[i] is nil when item i is scheduled (receipts[i] says how), else why it
// is not. An item's own fault wraps ErrInvalidEnvelope, ErrNotEnvelope,
// ErrTooLarge or ErrBadDueTime, and leaves the other items to be written;
// any other error is Redis's or the registry's (ErrLayoutMismatch), and
// retrying the item is safe (the same member or id replaces itself).
//
// The items of one slot go in one script call per up to 256 of them, in
// order (a later item with the same member or id wins), and every call of a
// batch shares one pipeline: a round trip per slot's worth, not per message.
// Each call wakes its slot once, for the earliest item it wrote.
func (q *Queue) ScheduleEach(ctx context.Context, t Topic, items []Item) (receipts []Receipt, errs []error) {
	return q.scheduleEach(ctx, t, items, false)
}

// ScheduleIntake is ScheduleEach for an intake: an item's id may have the
// form reserved for the ids intakes generate (IntakeID), which every other
// way of scheduling refuses.
func (q *Queue) ScheduleIntake(ctx context.Context, t Topic, items []Item) (receipts []Receipt, errs []error) {
	return q.scheduleEach(ctx, t, items, true)
}

func (q *Queue) scheduleEach(ctx context.Context, t Topic, items []Item, intake bool) (receipts []Receipt, errs []error) {
	if t.envelope() {
		items = withTraceItems(ctx, items)
	}
	puts, errs := t.prepare(items, intake)
	receipts = make([]Receipt, len(items))
	q.write(ctx, t, puts, receipts, errs)
	return receipts, errs
}

// put is one validated item on its way to Redis.
type put struct {
	receipt     Receipt
	envID       string // "" on raw topics
	mode, value string
}

// prepare encodes and validates every item: errs[i] says why item i cannot be
// scheduled. intake allows the ids intakes generate (IntakeID).
func (t Topic) prepare(items []Item, intake bool) ([]put, []error) {
	puts := make([]put, len(items))
	errs := make([]error, len(items))
	for i, it := range items {
		if err := t.checkSize(len(it.Message.Body)); err != nil {
			errs[i] = err
			continue
		}
		member, err := t.encode(it.Message, intake)
		if err != nil {
			errs[i] = err
			continue
		}
		p := put{receipt: Receipt{Topic: t.Name, Member: string(member)}}
		if t.envelope() {
			// Encode checked the id: no need to parse it back out.
			p.envID, p.receipt.ID, p.receipt.Slot = it.Message.ID, it.Message.ID, t.SlotOfID(it.Message.ID)
		} else {
			p.receipt.ID, p.receipt.Slot = MessageID(member), t.SlotOf(member)
		}
		if p.mode, p.value, err = it.When.args(); err != nil {
			errs[i] = fmt.Errorf("schedule in %s: %w", t.Name, err)
			continue
		}
		puts[i] = p
	}
	return puts, errs
}

// write schedules every put whose errs entry is nil, filling in its receipt,
// or its error.
func (q *Queue) write(ctx context.Context, t Topic, puts []put, receipts []Receipt, errs []error) {
	calls, owners := t.batchCalls(puts, errs)
	if len(calls) == 0 {
		return
	}
	fail := func(err error) {
		for _, idx := range owners {
			for _, i := range idx {
				errs[i] = fmt.Errorf("schedule in %s: %w", t.Name, full(err))
			}
		}
	}
	if err := q.checkLayout(ctx, t); err != nil {
		fail(err)
		return
	}
	cmds, confirms, err := q.evalAll(ctx, scheduleBatchScript, calls)
	if err != nil {
		fail(err)
		if Unconfirmed(err) {
			q.unconfirmed(len(puts))
		}
		return
	}
	for c, cmd := range cmds {
		q.readBatch(t, cmd, confirms[c], owners[c], puts, receipts, errs)
	}
	if t.Fair {
		q.fairIndexBatch(ctx, t, receipts, errs)
	}
}

// readBatch reads one call's reply into the receipts and errors of its
// items; confirm is its WAIT's verdict (nil: confirmed or not asked for).
func (q *Queue) readBatch(t Topic, cmd *redis.Cmd, confirm error, owner []int, puts []put, receipts []Receipt, errs []error) {
	res, err := cmd.Slice()
	if err == nil && len(res) != len(owner) {
		err = fmt.Errorf("malformed reply of %d elements for %d items", len(res), len(owner))
	}
	missed := 0
	for k, i := range owner {
		if err != nil {
			errs[i] = fmt.Errorf("schedule in %s: %w", t.Keys(puts[i].receipt.Slot).Scheduled, full(err))
			continue
		}
		r := puts[i].receipt
		if e := r.fillBatch(res[k]); e != nil {
			errs[i] = e
			continue
		}
		if confirm != nil {
			// Written, not confirmed: the receipt says what was written.
			errs[i] = fmt.Errorf("schedule in %s: %w", t.Keys(r.Slot).Scheduled, confirm)
			missed++
		}
		receipts[i] = r
	}
	q.unconfirmed(missed)
}

// batchCalls groups the puts that have no error by slot, in order, into
// script calls of up to slotBatchMax; owners[c] lists the items of call c.
func (t Topic) batchCalls(puts []put, errs []error) (calls []scriptCall, owners [][]int) {
	open := map[int]int{} // slot -> index of its call still filling
	for i, p := range puts {
		if errs[i] != nil {
			continue
		}
		slot := p.receipt.Slot
		c, ok := open[slot]
		if !ok || len(owners[c]) == slotBatchMax {
			channel, prefix := t.wakeArgs(slot)
			c = len(calls)
			open[slot] = c
			calls = append(calls, scriptCall{keys: slotKeys(t.Keys(slot)), args: []any{channel, prefix, flag(t.dedupMillis() > 0)}})
			owners = append(owners, nil)
		}
		calls[c].args = append(calls[c].args, p.receipt.Member, p.envID, p.mode, p.value)
		owners[c] = append(owners[c], i)
	}
	return calls, owners
}

// fillBatch reads one element of scheduleBatchScript's reply.
func (r *Receipt) fillBatch(v any) error {
	res, _ := v.([]any)
	if len(res) == 2 {
		if n, _ := res[1].(int64); n < 0 {
			s, _ := res[0].(string)
			return fmt.Errorf("schedule in %s: %w: %s ms", r.Topic, ErrBadDueTime, s)
		}
	}
	return r.fill(res)
}

// indexed joins the errors of errs, each named by its item's index; nil
// when there is none.
func indexed(errs []error) error {
	var named []error
	for i, err := range errs {
		if err != nil {
			named = append(named, fmt.Errorf("item %d: %w", i, err))
		}
	}
	return errors.Join(named...)
}

func count(errs []error) int {
	n := 0
	for _, err := range errs {
		if err != nil {
			n++
		}
	}
	return n
}

// scriptCall is one script invocation.
type scriptCall struct {
	keys []string
	args []any
}
