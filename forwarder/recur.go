package forwarder

import (
	"context"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// A recurrence's tick (queue.IsTick) is claimed, published, retried and
// dead-lettered like any message. Settling it differs in one step: the
// script that acknowledges it also writes the recurrence's next tick, and a
// tick the broker refused writes its next tick before it is retried, so a
// dead tick never stops its recurrence. Next ticks are computed here, from
// the tick and Redis's time at settlement (the gap rule: see
// queue.Schedule.Next).

// splitTicks takes the ticks out of members (ids[i]: members[i]'s envelope
// id, or nil): plain are acked as usual, ticks through settleTicks.
func splitTicks(members, ids []string) (plain, plainIDs, ticks []string) {
	n := 0
	for _, m := range members {
		if queue.IsTick(m) {
			n++
		}
	}
	if n == 0 {
		return members, ids, nil
	}
	for i, m := range members {
		if queue.IsTick(m) {
			ticks = append(ticks, m)
			continue
		}
		plain = append(plain, m)
		if i < len(ids) {
			plainIDs = append(plainIDs, ids[i])
		}
	}
	return plain, plainIDs, ticks
}

// failedTicks are the ticks among failures.
func failedTicks(failures []queue.Failure) []string {
	var ticks []string
	for _, f := range failures {
		if queue.IsTick(f.Member) {
			ticks = append(ticks, f.Member)
		}
	}
	return ticks
}

// settleTicks writes the next tick of each of ticks: acking them when the
// broker confirmed them, else only advancing them (their retry or death is
// recorded after). now is Redis's time.
func (s *scanner) settleTicks(ctx context.Context, ticks []string, confirmed bool, now time.Time) {
	if len(ticks) == 0 {
		return
	}
	op := "ack"
	if !confirmed {
		op = "retry"
	}
	var st queue.TickSettlement
	s.redisRetry(ctx, op, func(c context.Context) error {
		var err error
		st, err = s.f.q.SettleTicks(c, s.topic.Topic, s.slot, ticks, confirmed, now)
		return err
	})
	name := s.topic.Name
	if confirmed {
		s.f.m.TicksDelivered.WithLabelValues(name).Add(float64(len(ticks)))
	}
	if st.Skipped > 0 {
		s.f.m.TicksSkipped.WithLabelValues(name).Add(float64(st.Skipped))
	}
}
