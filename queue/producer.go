package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Decisions the producer API reports; check them with errors.Is.
var (
	// ErrInFlight: the message is claimed (being delivered right now), so it
	// can no longer be cancelled or rescheduled; nothing was changed.
	ErrInFlight = errors.New("message is in flight")
	// ErrNotFound: no such message is scheduled (or dead, for the dead set).
	ErrNotFound = errors.New("no such message")
	// ErrNotEnvelope: the call needs a topic in envelope format, or a raw
	// topic was given an id, headers or a routing key.
	ErrNotEnvelope = errors.New("topic is not in envelope format")
)

// When is a due time: an instant (At) or a delay from Redis's clock (In).
// The zero When is due at once.
type When struct {
	at       time.Time
	in       time.Duration
	relative bool
}

// At is due at t (refused when before 1970 or not exactly representable; see
// Score). A time already passed is due at once.
func At(t time.Time) When { return When{at: t} }

// In is due d after Redis's TIME when the call runs (the same clock the
// scanners use), rounded up to the next millisecond.
func In(d time.Duration) When { return When{in: d, relative: true} }

func (w When) String() string {
	if w.relative {
		return "in " + w.in.String()
	}
	return "at " + w.at.UTC().Format(time.RFC3339Nano)
}

// args are the mode and value a script takes ("at" score, or "in" delay).
func (w When) args() (mode, value string, err error) {
	if !w.relative && w.at.IsZero() {
		return "in", "0", nil
	}
	if w.relative {
		ms := w.in.Milliseconds()
		if w.in > time.Duration(ms)*time.Millisecond {
			ms++
		}
		return "in", strconv.FormatInt(ms, 10), nil
	}
	score, err := Score(w.at)
	if err != nil {
		return "", "", err
	}
	return "at", strconv.FormatFloat(score, 'f', -1, 64), nil
}

// estimate is the due time as seen by the local clock (only to pick which of
// a batch's messages announces a wake-up).
func (w When) estimate(now time.Time) time.Time {
	if w.relative {
		return now.Add(w.in)
	}
	return w.at
}

// Replaced says what a schedule replaced.
type Replaced int

const (
	// ReplacedNothing: the message is new.
	ReplacedNothing Replaced = iota
	// ReplacedScheduled: the member (raw) or id (envelope) was already
	// scheduled; it now has the new due time (and, for an id, the new content).
	ReplacedScheduled
	// ReplacedInFlight: the id's previous member was being delivered. That
	// delivery proceeds, but is never retried: the new member replaces it.
	ReplacedInFlight
)

func (r Replaced) String() string {
	switch r {
	case ReplacedScheduled:
		return "scheduled"
	case ReplacedInFlight:
		return "in-flight"
	default:
		return "nothing"
	}
}

// Receipt says where and when a message was scheduled.
type Receipt struct {
	Topic string
	Slot  int
	// ID is the envelope id, or MessageID(member) for raw members.
	ID     string
	Member string
	// Score is the due time in Unix ms, as stored.
	Score    float64
	Replaced Replaced
}

// Due is the due time.
func (r Receipt) Due() time.Time { return MillisTime(r.Score) }

// ScheduleAt schedules m on t, due at due. On a raw topic m carries only a
// Body (the member); on an envelope topic m.ID is required and scheduling an
// id that exists replaces that message (idempotent producers).
func (q *Queue) ScheduleAt(ctx context.Context, t Topic, m Message, due time.Time) (Receipt, error) {
	return q.ScheduleMessage(ctx, t, m, At(due))
}

// ScheduleIn schedules m on t, due delay after Redis's TIME.
func (q *Queue) ScheduleIn(ctx context.Context, t Topic, m Message, delay time.Duration) (Receipt, error) {
	return q.ScheduleMessage(ctx, t, m, In(delay))
}

// ScheduleMessage schedules m on t, due when says.
func (q *Queue) ScheduleMessage(ctx context.Context, t Topic, m Message, when When) (Receipt, error) {
	member, err := t.Encode(m)
	if err != nil {
		return Receipt{}, fmt.Errorf("schedule: %w", err)
	}
	return q.ScheduleMember(ctx, t, member, when)
}

// Schedule adds a member to its slot of t, due at due. Scheduling a raw
// member that is already scheduled moves it to the new time (members are
// unique: the same bytes are one message). On an envelope topic the member
// must be a valid envelope, and it replaces the message its id names.
func (q *Queue) Schedule(ctx context.Context, t Topic, member []byte, due time.Time) error {
	_, err := q.ScheduleMember(ctx, t, member, At(due))
	return err
}

// ScheduleMember adds a member as is (an encoded envelope on envelope topics).
func (q *Queue) ScheduleMember(ctx context.Context, t Topic, member []byte, when When) (Receipt, error) {
	c, r, err := t.scheduleCall(member, when, true)
	if err != nil {
		return Receipt{}, err
	}
	res, err := scheduleScript.Run(ctx, q.rdb, c.keys, c.args...).Slice()
	if err != nil {
		return Receipt{}, fmt.Errorf("schedule in %s: %w", t.Keys(r.Slot).Scheduled, dueErr(err))
	}
	return r, r.fill(res)
}

// scheduleCall validates a member and builds its schedule script call.
func (t Topic) scheduleCall(member []byte, when When, wake bool) (scriptCall, Receipt, error) {
	slot, id, err := t.Locate(member)
	if err != nil {
		return scriptCall{}, Receipt{}, fmt.Errorf("schedule: %w", err)
	}
	mode, value, err := when.args()
	if err != nil {
		return scriptCall{}, Receipt{}, fmt.Errorf("schedule in %s: %w", t.Name, err)
	}
	k := t.Keys(slot)
	var channel, prefix string
	if wake {
		channel, prefix = t.wakeArgs(slot)
	}
	envID := ""
	if t.envelope() {
		envID = id
	}
	c := scriptCall{
		keys: []string{k.Scheduled, k.Inflight, k.Due, k.Attempts, k.IDs},
		args: []any{member, envID, mode, value, channel, prefix},
	}
	return c, Receipt{Topic: t.Name, Slot: slot, ID: id, Member: string(member)}, nil
}

// fill reads the schedule script's reply {score, replaced}.
func (r *Receipt) fill(res []any) error {
	if len(res) != 2 {
		return fmt.Errorf("schedule in %s: malformed reply of %d elements", r.Topic, len(res))
	}
	s, _ := res[0].(string)
	score, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("schedule in %s: parse score %q: %w", r.Topic, s, err)
	}
	n, _ := res[1].(int64)
	r.Score, r.Replaced = score, Replaced(n)
	return nil
}

// Cancel removes a member that is not yet claimed and reports whether it was
// scheduled. A member already claimed is not cancelled: the error wraps
// ErrInFlight and nothing changes.
func (q *Queue) Cancel(ctx context.Context, t Topic, member []byte) (bool, error) {
	id := t.memberID(string(member))
	return q.cancel(ctx, t, t.SlotOf(member), string(member), id)
}

// CancelID removes the message an envelope id names, if it is not yet
// claimed (else the error wraps ErrInFlight and nothing changes).
func (q *Queue) CancelID(ctx context.Context, t Topic, id string) (bool, error) {
	if err := t.needEnvelope(id); err != nil {
		return false, fmt.Errorf("cancel: %w", err)
	}
	return q.cancel(ctx, t, t.SlotOfID(id), "", id)
}

func (q *Queue) cancel(ctx context.Context, t Topic, slot int, member, id string) (bool, error) {
	k := t.Keys(slot)
	res, err := cancelScript.Run(ctx, q.rdb,
		[]string{k.Scheduled, k.Inflight, k.Due, k.Attempts, k.IDs}, member, id).Slice()
	if err != nil {
		return false, fmt.Errorf("cancel in %s: %w", k.Scheduled, err)
	}
	if len(res) != 2 {
		return false, fmt.Errorf("cancel in %s: malformed reply of %d elements", k.Scheduled, len(res))
	}
	switch n, _ := res[0].(int64); n {
	case 1:
		return true, nil
	case 2:
		return false, fmt.Errorf("cancel %s in %s: %w", describe(member, id), k.Scheduled, ErrInFlight)
	default:
		return false, nil
	}
}

// Reschedule moves a scheduled message (by member, or by id on envelope
// topics) to a new due time. The error wraps ErrNotFound when there is no
// such message and ErrInFlight when it is already claimed (nothing changes).
func (q *Queue) Reschedule(ctx context.Context, t Topic, ref Ref, when When) (Receipt, error) {
	if err := ref.one(false); err != nil {
		return Receipt{}, fmt.Errorf("reschedule: %w", err)
	}
	mode, value, err := when.args()
	if err != nil {
		return Receipt{}, fmt.Errorf("reschedule in %s: %w", t.Name, err)
	}
	var slot int
	var member, id string
	if ref.ID != "" {
		if err := t.needEnvelope(ref.ID); err != nil {
			return Receipt{}, fmt.Errorf("reschedule: %w", err)
		}
		slot, id = t.SlotOfID(ref.ID), ref.ID
	} else {
		slot, member, id = t.SlotOf(ref.Member), string(ref.Member), t.memberID(string(ref.Member))
	}
	k := t.Keys(slot)
	channel, prefix := t.wakeArgs(slot)
	res, err := rescheduleScript.Run(ctx, q.rdb, []string{k.Scheduled, k.Inflight, k.Due, k.IDs},
		member, id, mode, value, channel, prefix).Slice()
	if err != nil {
		return Receipt{}, fmt.Errorf("reschedule in %s: %w", k.Scheduled, dueErr(err))
	}
	if len(res) != 3 {
		return Receipt{}, fmt.Errorf("reschedule in %s: malformed reply of %d elements", k.Scheduled, len(res))
	}
	state, _ := res[0].(int64)
	m, _ := res[1].(string)
	switch state {
	case 1:
	case 2:
		return Receipt{}, fmt.Errorf("reschedule %s in %s: %w", describe(member, id), k.Scheduled, ErrInFlight)
	default:
		return Receipt{}, fmt.Errorf("reschedule %s in %s: %w", describe(member, id), k.Scheduled, ErrNotFound)
	}
	r := Receipt{Topic: t.Name, Slot: slot, ID: id, Member: m, Replaced: ReplacedScheduled}
	if !t.envelope() {
		r.ID = MessageID([]byte(m))
	}
	s, _ := res[2].(string)
	if r.Score, err = strconv.ParseFloat(s, 64); err != nil {
		return Receipt{}, fmt.Errorf("reschedule in %s: parse score %q: %w", k.Scheduled, s, err)
	}
	return r, nil
}

// dueErr turns a script's refusal of a due time into ErrBadDueTime.
func dueErr(err error) error {
	if redis.HasErrorPrefix(err, "due time") {
		return fmt.Errorf("%w: %s", ErrBadDueTime, strings.TrimPrefix(err.Error(), "ERR "))
	}
	return err
}

// needEnvelope checks that t is an envelope topic and id a valid id.
func (t Topic) needEnvelope(id string) error {
	if !t.envelope() {
		return fmt.Errorf("topic %s: by id: %w", t.Name, ErrNotEnvelope)
	}
	if err := CheckID(id); err != nil {
		return fmt.Errorf("topic %s: %w", t.Name, err)
	}
	return nil
}

// describe names a message in errors: by id when there is one.
func describe(member, id string) string {
	if id != "" {
		return "id " + strconv.Quote(id)
	}
	if len(member) > 64 {
		member = member[:64] + "…"
	}
	return "member " + strconv.Quote(member)
}
