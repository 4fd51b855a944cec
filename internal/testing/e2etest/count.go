package e2etest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
)

// Outcome is what became of the messages of a Plan.
type Outcome struct {
	Messages  int
	Delivered int // distinct messages delivered
	Dead      int // dead-lettered with a reason and never delivered
	// Lost messages were neither delivered nor dead-lettered with a reason.
	Lost int
	// Early deliveries arrived before their due time.
	Early int
	// CancelledDelivered are deliveries of messages the plan cancelled.
	CancelledDelivered int
	// Duplicates are deliveries beyond the first of a message.
	Duplicates int
	// BadHeader deliveries carry an x-delaybridge-due other than planned.
	BadHeader int
	// Foreign deliveries carry no number of the plan.
	Foreign int
	// WorstLateness is the largest first delivery time minus due time.
	WorstLateness time.Duration
	// First is the first delivery time of each message (zero: none).
	First []time.Time
	// Reasons counts the dead-letter reasons.
	Reasons map[string]int
	// LostNumbers and EarlyNumbers are the first lost and early messages,
	// for the failure message.
	LostNumbers, EarlyNumbers []int
}

// Count checks deliveries and dead-lettered messages (number → reason)
// against the plan. A cancelled message that never arrived is not lost.
func (p *Plan) Count(got []Delivery, dead map[int]string) Outcome {
	o := Outcome{Messages: p.Len(), First: make([]time.Time, p.Len()), Reasons: map[string]int{}}
	seen := make([]int, p.Len())
	for _, d := range got {
		i := Number(d.Body)
		if i < 0 || i >= p.Len() {
			o.Foreign++
			continue
		}
		seen[i]++
		if seen[i] > 1 {
			o.Duplicates++
		}
		if p.Cancelled[i] {
			o.CancelledDelivered++
		}
		if d.At.Before(p.Due[i]) {
			o.Early++
			if len(o.EarlyNumbers) < 10 {
				o.EarlyNumbers = append(o.EarlyNumbers, i)
			}
		}
		if d.Due != p.Due[i].UnixMilli() {
			o.BadHeader++
		}
		if o.First[i].IsZero() || d.At.Before(o.First[i]) {
			o.First[i] = d.At
		}
	}
	for i := range p.Len() {
		reason, isDead := dead[i]
		switch {
		case seen[i] > 0:
			o.Delivered++
			o.WorstLateness = max(o.WorstLateness, o.First[i].Sub(p.Due[i]))
		case p.Cancelled[i]: // never arrived, as it should
		case isDead && strings.TrimSpace(reason) != "":
			o.Dead++
			o.Reasons[reason]++
		default:
			o.Lost++
			if len(o.LostNumbers) < 10 {
				o.LostNumbers = append(o.LostNumbers, i)
			}
		}
	}
	return o
}

// Check fails the test on any loss, early delivery, delivery of a cancelled
// message, wrong due header or foreign delivery, and logs the outcome.
func (o Outcome) Check(tb testing.TB) {
	tb.Helper()
	tb.Logf("messages %d: delivered %d, dead-lettered %d, lost %d, early %d, duplicates %d, worst lateness %s",
		o.Messages, o.Delivered, o.Dead, o.Lost, o.Early, o.Duplicates, o.WorstLateness.Round(time.Millisecond))
	for _, r := range SortedReasons(o.Reasons) {
		tb.Logf("dead-lettered %d× with reason %q", o.Reasons[r], r)
	}
	if o.Lost > 0 {
		tb.Errorf("%d messages lost (neither delivered nor dead-lettered with a reason), first: %v", o.Lost, o.LostNumbers)
	}
	if o.Early > 0 {
		tb.Errorf("%d deliveries before their due time, first: %v", o.Early, o.EarlyNumbers)
	}
	if o.CancelledDelivered > 0 {
		tb.Errorf("%d deliveries of cancelled messages", o.CancelledDelivered)
	}
	if o.BadHeader > 0 {
		tb.Errorf("%d deliveries with an x-delaybridge-due other than the planned due time", o.BadHeader)
	}
	if o.Foreign > 0 {
		tb.Errorf("%d deliveries that are not messages of this test", o.Foreign)
	}
}

// DeadMember is one member of a dead set.
type DeadMember struct {
	Slot   int
	Member string
	Reason string
}

// DeadSet reads every dead-lettered member of t with its reason.
func DeadSet(tb testing.TB, rdb redis.UniversalClient, t queue.Topic) []DeadMember {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []DeadMember
	for slot := range t.SlotCount() {
		k := t.Keys(slot)
		members, err := rdb.ZRange(ctx, k.Dead, 0, -1).Result()
		if err != nil {
			tb.Fatalf("read %s: %v", k.Dead, err)
		}
		reasons, err := rdb.HGetAll(ctx, k.DeadReason).Result()
		if err != nil {
			tb.Fatalf("read %s: %v", k.DeadReason, err)
		}
		for _, m := range members {
			out = append(out, DeadMember{Slot: slot, Member: m, Reason: reasons[m]})
		}
	}
	return out
}

// DeadNumbers reads the dead sets of topics and returns the plan's numbers
// found there with their reasons. Members that carry no number are returned
// in others.
func DeadNumbers(tb testing.TB, rdb redis.UniversalClient, topics ...queue.Topic) (numbers map[int]string, others []DeadMember) {
	tb.Helper()
	numbers = map[int]string{}
	for _, t := range topics {
		for _, d := range DeadSet(tb, rdb, t) {
			body := []byte(d.Member)
			if m, err := t.Decode(d.Member); err == nil {
				body = m.Body
			}
			if n := Number(body); n >= 0 {
				numbers[n] = d.Reason
			} else {
				others = append(others, d)
			}
		}
	}
	return numbers, others
}

// Inflight is the number of claimed, unconfirmed messages of t (all slots).
func Inflight(ctx context.Context, rdb redis.UniversalClient, t queue.Topic) (int64, error) {
	var total int64
	for slot := range t.SlotCount() {
		n, err := rdb.ZCard(ctx, t.Keys(slot).Inflight).Result()
		if err != nil {
			return 0, fmt.Errorf("zcard %s: %w", t.Keys(slot).Inflight, err)
		}
		total += n
	}
	return total, nil
}

// Overdue is the number of scheduled messages of t already due, by Redis's
// clock (all slots).
func Overdue(ctx context.Context, rdb redis.UniversalClient, t queue.Topic) (int64, error) {
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("redis time: %w", err)
	}
	upTo := fmt.Sprint(now.UnixMilli())
	var total int64
	for slot := range t.SlotCount() {
		n, err := rdb.ZCount(ctx, t.Keys(slot).Scheduled, "-inf", upTo).Result()
		if err != nil {
			return 0, fmt.Errorf("zcount %s: %w", t.Keys(slot).Scheduled, err)
		}
		total += n
	}
	return total, nil
}

// SortedReasons lists reasons by count, most frequent first.
func SortedReasons(reasons map[string]int) []string {
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if reasons[keys[i]] != reasons[keys[j]] {
			return reasons[keys[i]] > reasons[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
