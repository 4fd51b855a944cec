package queue

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// AllSlots asks DeadList for every slot of a topic.
const AllSlots = -1

// deadPage is how many dead members one call reads or moves.
const deadPage = 500

// DeadMessage is one dead-lettered member.
type DeadMessage struct {
	Topic  string
	Slot   int
	Member string
	// ID is the envelope id, or MessageID(member) on raw topics; "" when the
	// member is not a valid envelope (that is usually why it died).
	ID     string
	Died   time.Time
	Reason string
}

func (t Topic) deadMessage(slot int, z redis.Z) DeadMessage {
	m, _ := z.Member.(string)
	d := DeadMessage{Topic: t.Name, Slot: slot, Member: m, Died: MillisTime(z.Score)}
	if id, ok := tickMessageID(m); ok {
		d.ID = id // a recurrence's tick: the id it was delivered with
	} else if t.envelope() {
		d.ID = t.memberID(m)
	} else {
		d.ID = MessageID([]byte(m))
	}
	return d
}

// slotsOf lists one slot, or every slot for AllSlots.
func (t Topic) slotsOf(slot int) ([]int, error) {
	if slot == AllSlots {
		out := make([]int, t.SlotCount())
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	if slot < 0 || slot >= t.SlotCount() {
		return nil, fmt.Errorf("topic %s has no slot %d (slots 0 to %d)", t.Name, slot, t.SlotCount()-1)
	}
	return []int{slot}, nil
}

// DeadList returns up to limit dead messages of one slot (or AllSlots),
// the most recent deaths first, with their reasons. A limit of 0 or less
// lists every one.
func (q *Queue) DeadList(ctx context.Context, t Topic, slot, limit int) ([]DeadMessage, error) {
	slots, err := t.slotsOf(slot)
	if err != nil {
		return nil, fmt.Errorf("dead list: %w", err)
	}
	stop := int64(limit) - 1
	if limit <= 0 {
		stop = -1
	}
	pipe := q.rdb.Pipeline()
	cmds := make([]*redis.ZSliceCmd, len(slots))
	for i, s := range slots {
		cmds[i] = pipe.ZRevRangeWithScores(ctx, t.Keys(s).Dead, 0, stop)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("dead list of %s: %w", t.Name, err)
	}
	var out []DeadMessage
	for i, c := range cmds {
		for _, z := range c.Val() {
			out = append(out, t.deadMessage(slots[i], z))
		}
	}
	slices.SortStableFunc(out, func(a, b DeadMessage) int { return b.Died.Compare(a.Died) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, q.reasons(ctx, t, out)
}

// reasons fills in the reason of each dead message.
func (q *Queue) reasons(ctx context.Context, t Topic, dead []DeadMessage) error {
	if len(dead) == 0 {
		return nil
	}
	pipe := q.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(dead))
	for i, d := range dead {
		cmds[i] = pipe.HGet(ctx, t.Keys(d.Slot).DeadReason, d.Member)
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return fmt.Errorf("dead reasons of %s: %w", t.Name, err)
	}
	for i, c := range cmds {
		dead[i].Reason = c.Val()
	}
	return nil
}

// DeadCount is how many messages of t are dead, over every slot.
func (q *Queue) DeadCount(ctx context.Context, t Topic) (int64, error) {
	pipe := q.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, t.SlotCount())
	for s := range cmds {
		cmds[s] = pipe.ZCard(ctx, t.Keys(s).Dead)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("dead count of %s: %w", t.Name, err)
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

// DeadFind returns the dead messages ref names, the most recent deaths first:
// one member; every dead member with an id (envelope topics search the id's
// slot; raw topics compare MessageID over every slot); or all of them. Finding
// by id scans the dead set (ZSCAN), so it costs time in its size.
func (q *Queue) DeadFind(ctx context.Context, t Topic, ref Ref) ([]DeadMessage, error) {
	if err := ref.one(true); err != nil {
		return nil, fmt.Errorf("dead find: %w", err)
	}
	var out []DeadMessage
	var err error
	switch {
	case ref.All:
		return q.DeadList(ctx, t, AllSlots, 0)
	case ref.ID != "":
		out, err = q.deadByID(ctx, t, ref.ID)
	default:
		out, err = q.deadByMember(ctx, t, ref.Member)
	}
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b DeadMessage) int { return b.Died.Compare(a.Died) })
	return out, q.reasons(ctx, t, out)
}

func (q *Queue) deadByMember(ctx context.Context, t Topic, member []byte) ([]DeadMessage, error) {
	slots := []int{t.SlotOf(member)}
	if _, _, err := t.Locate(member); err != nil {
		slots, _ = t.slotsOf(AllSlots) // an invalid envelope may sit in any slot
	}
	pipe := q.rdb.Pipeline()
	cmds := make([]*redis.FloatCmd, len(slots))
	for i, s := range slots {
		cmds[i] = pipe.ZScore(ctx, t.Keys(s).Dead, string(member))
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("dead find in %s: %w", t.Name, err)
	}
	var out []DeadMessage
	for i, c := range cmds {
		if c.Err() == nil {
			out = append(out, t.deadMessage(slots[i], redis.Z{Member: string(member), Score: c.Val()}))
		}
	}
	return out, nil
}

func (q *Queue) deadByID(ctx context.Context, t Topic, id string) ([]DeadMessage, error) {
	slots, _ := t.slotsOf(AllSlots)
	if t.envelope() {
		if err := CheckID(id); err != nil {
			return nil, fmt.Errorf("dead find in %s: %w", t.Name, err)
		}
		slots = []int{t.SlotOfID(id)}
		if rid, ok := recurrenceOfTick(id); ok && t.SlotOfID(rid) != slots[0] {
			slots = append(slots, t.SlotOfID(rid)) // a tick is in its recurrence's slot
		}
	}
	var out []DeadMessage
	for _, s := range slots {
		key := t.Keys(s).Dead
		var cursor uint64
		for {
			kv, next, err := q.rdb.ZScan(ctx, key, cursor, "", deadPage).Result()
			if err != nil {
				return nil, fmt.Errorf("dead find in %s: %w", key, err)
			}
			for i := 0; i+1 < len(kv); i += 2 {
				d := t.deadMessage(s, redis.Z{Member: kv[i], Score: parseScore(kv[i+1])})
				if d.ID == id && !slices.ContainsFunc(out, func(o DeadMessage) bool { return o.Slot == s && o.Member == d.Member }) {
					out = append(out, d) // ZSCAN may return a member twice
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return out, nil
}

func parseScore(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}
