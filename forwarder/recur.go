package forwarder

import (
	"context"
	"log/slog"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// A recurrence's tick (a member the claim vouched for: queue.Claimed.Tick,
// delivery.vouched) is claimed, published, retried and
// dead-lettered like any message. Settling it differs in one step: the
// script that acknowledges it also writes the recurrence's next tick, and a
// tick that dies writes its next tick first, so a dead tick never stops its
// recurrence. Next ticks are computed here, from the tick and Redis's time
// when the settler had the broker's answer about it (the gap rule: see
// queue.RecurSpec.Next), not when the settlement is written: acks wait up to
// ackDelay to be grouped, and longer while Redis stalls, and a tick
// confirmed before the next one is due must not skip it.

// deadTicks are the ticks among failures that outs says died: advanced
// again after the fact (a no-op for those sortOut found final), in case one
// had failed more often than its claim said. vouched holds the group's
// vouched ticks (settlement.tickAt): a failure absent from it is a plain
// message, whatever its bytes look like.
func deadTicks(failures []queue.Failure, outs []queue.Outcome, vouched map[string]time.Time) []string {
	var ticks []string
	for i, out := range outs {
		if _, tick := vouched[failures[i].Member]; out == queue.Dead && tick {
			ticks = append(ticks, failures[i].Member)
		}
	}
	return ticks
}

// settleTicks writes the next tick of each of ticks: acking them when the
// broker confirmed them, else only advancing them (their death is recorded
// after). at is when the settler had each one's answer, on Redis's clock
// (settlement.tickAt).
func (s *scanner) settleTicks(ctx context.Context, ticks []string, confirmed bool, at map[string]time.Time) {
	if len(ticks) == 0 {
		return
	}
	settled := make([]queue.TickAt, len(ticks))
	for i, m := range ticks {
		settled[i] = queue.TickAt{Member: m, At: at[m]}
	}
	op := "ack"
	if !confirmed {
		op = "retry"
	}
	var st queue.TickSettlement
	s.redisRetry(ctx, op, func(c context.Context) error {
		var err error
		st, err = s.store.SettleTicksAt(c, s.topic.Topic, s.key.slot, settled, confirmed)
		return err
	})
	if !st.Earliest.IsZero() { // the next tick waits in this slot: its scanner looks again by then
		s.wakes.wake(s.key, float64(st.Earliest.UnixMilli()))
	}
	name := s.topic.Name
	if confirmed {
		s.m.TicksDelivered.WithLabelValues(name).Add(float64(len(ticks)))
	}
	if st.Skipped > 0 {
		s.m.TicksSkipped.WithLabelValues(name).Add(float64(st.Skipped))
	}
	if st.Unreadable > 0 {
		s.repeats.Add(slog.LevelError, name, "recurrence tick unreadable: its recurrence stops until it is set again", st.Unreadable, st.Err.Error())
	}
}
