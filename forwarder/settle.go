package forwarder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/delaybridge/delaybridge/internal/backoff"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// maxGroup is the most messages whose Redis records one write combines.
const maxGroup = 2000

// ackDelay is how long confirmed messages may wait to be acked, so that a
// trickle of small batches takes one Redis round trip every tenth of a
// second instead of one per batch: an ack is a script call, and acking each
// small batch at once makes acks a large share of a steady slot's Redis
// calls (bench/ measures it: docs/performance.md, What makes it fast). They
// stay in flight meanwhile: a crash in this window costs a duplicate after
// the lease, never a loss. They no longer count against the slot's
// in-flight cap (MaxInflightBatches counts a batch until its confirm), so
// the next claim overlaps their ack: with one batch in flight, claim,
// confirm and ack no longer follow one another.
const ackDelay = 100 * time.Millisecond

// settleLoop waits for each delivery's answer in order and records the
// outcomes in Redis. Fully confirmed deliveries wait up to ackDelay
// and acked together; any other outcome is recorded at once, with the acks
// waiting before it.
func (s *scanner) settleLoop(ctx context.Context, sent <-chan *delivery) {
	h := newUnrecorded()
	defer h.timer.Stop()
	flush := func() {
		if group, n := h.take(); len(group) > 0 {
			s.record(ctx, group)
			s.in.settle(n)
		}
	}
	var d *delivery // the delivery whose answer is awaited, if any
	for {
		// One delivery at a time, in order: the next is taken once d is
		// answered. Waiting acks fall due meanwhile all the same.
		var next <-chan *delivery
		var answered, ended <-chan struct{}
		if d == nil {
			next = sent
		} else {
			answered, ended = d.done, ctx.Done()
		}
		select {
		case nd, ok := <-next:
			if !ok {
				flush()
				return
			}
			d = nd
			continue
		case <-answered:
		case <-ended:
		case <-h.timer.C:
			h.timing = false
			flush()
			continue
		case <-s.in.wanted:
			flush()
			continue
		}
		s.await(ctx, d)
		h.add(d)
		if !d.confirmed() || h.n >= maxGroup {
			flush()
		} else {
			// Confirmed: the batch leaves the in-flight count now and its
			// ack waits; what is lost or refused stays counted until
			// recorded (the slot's order after a loss needs that).
			s.in.settle(h.confirmed(d))
			h.arm()
		}
		d = nil
	}
}

// unrecorded are the awaited deliveries not recorded yet: fully confirmed ones
// wait up to ackDelay to be acked together.
type unrecorded struct {
	group     []*delivery
	n         int // messages in group
	uncounted int // of n, those already out of the in-flight count (confirmed)
	timer     *time.Timer
	timing    bool // timer runs
}

func newUnrecorded() *unrecorded {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &unrecorded{timer: t}
}

func (h *unrecorded) add(d *delivery) {
	h.group = append(h.group, d)
	h.n += len(d.b.claimed)
}

// arm starts the ackDelay of the oldest waiting delivery, unless it runs.
func (h *unrecorded) arm() {
	if !h.timing {
		h.timer.Reset(ackDelay)
		h.timing = true
	}
}

// confirmed marks d's messages, confirmed, as settled in the in-flight count
// before their ack, and returns how many they are.
func (h *unrecorded) confirmed(d *delivery) int {
	n := len(d.b.claimed)
	h.uncounted += n
	return n
}

// take empties h and returns what it had and how many of its messages still
// count in flight (those not taken out at their confirm).
func (h *unrecorded) take() ([]*delivery, int) {
	group, n := h.group, h.n-h.uncounted
	h.group, h.n, h.uncounted = nil, 0, 0
	if h.timing {
		h.timer.Stop()
		h.timing = false
	}
	return group, n
}

// await waits for the sink's answer about d (or the end of the drain
// context), notes when it came on Redis's clock (d.answered) and observes
// the publish metrics.
func (s *scanner) await(ctx context.Context, d *delivery) {
	var err error
	var answered time.Time
	select {
	case <-d.done:
		err = d.result()
		answered = d.came
	case <-ctx.Done():
		err = fmt.Errorf("wait for broker confirms: %w", ctx.Err())
	}
	if answered.IsZero() {
		answered = s.clock.Now()
	}
	d.answered = d.b.redisClock.at(answered)
	if len(d.msgs) == 0 || d.unsent {
		return
	}
	d.results = sinks.Results(err, len(d.msgs))
	if err != nil && anyLost(d.results) {
		s.in.breakOrder() // the batches claimed after this one go back too
	}
	name := s.topic.Name
	confirmed := s.clock.Now()
	d.spans.end(d.results, confirmed)
	s.m.Latency.WithLabelValues(name).Observe(confirmed.Sub(d.began).Seconds())
	lateness := s.m.Lateness.WithLabelValues(name)
	redisNow := confirmed.Add(d.b.skew)
	for i, e := range d.results {
		if e == nil {
			lateness.Observe(redisNow.Sub(d.msgs[i].Due).Seconds())
		}
	}
}

// confirmed reports whether every message of d was confirmed (and none
// failed to decode), so all that is left is to ack them.
func (d *delivery) confirmed() bool {
	if d.unsent || len(d.failures) > 0 {
		return false
	}
	for _, e := range d.results {
		if e != nil {
			return false
		}
	}
	return true
}

// settlement is what a group of awaited deliveries asks of Redis.
type settlement struct {
	acks     []string        // confirmed, not ticks
	ackIDs   []string        // acks[i]'s envelope id (nil on raw topics)
	ackTicks []string        // confirmed recurrence ticks (recur.go)
	releases []string        // back without an attempt
	unsent   int             // of releases, those never published (slot order)
	blocked  int             // of releases, those the broker's block refused (logged by the sink)
	failures []queue.Failure // to retry or dead-letter: refused or undecodable
	// noDestination: some were refused because the exchange or topic is
	// missing or routes nowhere, which an operator must fix (WARN).
	noDestination bool
	failed        map[outcome]int // messages the sink did not confirm, by outcome
	// final are the ticks among failures whose failure dead-letters them:
	// a permanent refusal, an undecodable tick, or the last of maxAttempts.
	// Their next tick is written before their death (recur.go).
	final []string
	// tickAt is, for each tick of the group, when the settler had its
	// answer (delivery.answered, Redis's clock): its next tick is the first
	// after then, however long its settlement waits to be written. Nil
	// when the group has no tick.
	tickAt map[string]time.Time
}

// sortOut classifies every message of a group of awaited deliveries, ticks
// included: the one place the outcomes are decided. It writes nothing.
// retry is the schedule of a refused message's next attempt, maxAttempts
// the attempts that dead-letter it.
func sortOut(group []*delivery, retry backoff.Policy, maxAttempts int) settlement {
	st := settlement{failed: map[outcome]int{}}
	for _, d := range group {
		st.failures = append(st.failures, d.failures...)
		for _, f := range d.failures {
			if d.vouched[f.Member] {
				st.final = append(st.final, f.Member) // undecodable: it dies
				st.answeredAt(f.Member, d)
			}
		}
		if d.unsent {
			st.releases = append(st.releases, d.members...)
			st.unsent += len(d.members)
			continue
		}
		for i, e := range d.results {
			if e == nil {
				st.confirmed(d, i)
				continue
			}
			o := outcomeOf(e)
			st.failed[o]++
			if o.lost() {
				st.releases = append(st.releases, d.members[i])
				if _, ok := sinks.BlockReason(e); ok {
					st.blocked++
				}
				continue
			}
			st.noDestination = st.noDestination || errors.Is(e, sinks.ErrNoDestination)
			st.failures = append(st.failures, queue.Failure{
				Member:    d.members[i],
				ID:        d.indexID(i),
				Backoff:   retry.Delay(d.msgs[i].Attempt - 1),
				Permanent: o == outcomePermanent,
				Reason:    e.Error(),
			})
			if d.vouched[d.members[i]] {
				st.answeredAt(d.members[i], d)
				if o == outcomePermanent || d.msgs[i].Attempt >= maxAttempts {
					st.final = append(st.final, d.members[i])
				}
			}
		}
	}
	return st
}

// confirmed files d's ith message, which the broker confirmed, as an ack:
// a tick's (recur.go) or a plain one's, with its envelope id.
func (st *settlement) confirmed(d *delivery, i int) {
	if d.vouched[d.members[i]] {
		st.ackTicks = append(st.ackTicks, d.members[i])
		st.answeredAt(d.members[i], d)
		return
	}
	st.acks = append(st.acks, d.members[i])
	if d.indexed {
		st.ackIDs = append(st.ackIDs, d.msgs[i].ID)
	}
}

// answeredAt notes that tick was answered when d was.
func (st *settlement) answeredAt(tick string, d *delivery) {
	if st.tickAt == nil {
		st.tickAt = map[string]time.Time{}
	}
	st.tickAt[tick] = d.answered
}

// record writes the outcomes of a group of awaited deliveries to Redis:
// confirmed ones are acked (in one call), connection losses and unsent
// batches released, broker refusals retried or dead-lettered. It retries
// for a while when Redis is unreachable; what cannot be written stays in
// flight and the reaper returns it once the lease expires (a duplicate,
// never a loss).
func (s *scanner) record(ctx context.Context, group []*delivery) {
	defer func() {
		for _, d := range group {
			s.leases.drop(d.b.lease)
		}
	}()
	st := sortOut(group, s.cfg.Retry, s.cfg.MaxAttempts)
	for o, n := range st.failed {
		s.m.Failures.WithLabelValues(s.topic.Name, o.String()).Add(float64(n))
	}
	s.ack(ctx, &st)
	s.releaseLost(ctx, st.releases, st.unsent, st.blocked)
	s.settleTicks(ctx, st.final, false, st.tickAt)
	outs := s.retry(ctx, st.failures, st.noDestination)
	s.traceDead(group, st.failures, outs)
	s.settleTicks(ctx, deadTicks(st.failures, outs, st.tickAt), false, st.tickAt)
}

// ack forgets the confirmed members of st; their envelope ids were decoded
// by prepare (nil on raw topics). Recurrences' ticks among them write their
// next tick as they go (settleTicks, from when each was confirmed).
func (s *scanner) ack(ctx context.Context, st *settlement) {
	if len(st.acks) > 0 {
		s.redisRetry(ctx, "ack", func(c context.Context) error {
			_, err := s.store.AckIDs(c, s.topic.Topic, s.key.slot, st.acks, st.ackIDs)
			return err
		})
	}
	s.settleTicks(ctx, st.ackTicks, true, st.tickAt)
	if n := len(st.acks) + len(st.ackTicks); n > 0 {
		s.m.Published.WithLabelValues(s.topic.Name).Add(float64(n))
	}
}

// releaseLost releases members the connection lost or left unsent (back
// without an attempt); unsent of them were never published, blocked of them
// refused while the broker blocks publishing (the sink logs the block once,
// not each batch it turns back).
func (s *scanner) releaseLost(ctx context.Context, members []string, unsent, blocked int) {
	if len(members) == 0 {
		return
	}
	s.release(ctx, members, backUnsettled)
	if lost := len(members) - unsent - blocked; lost > 0 {
		s.repeats.Add(slog.LevelWarn, s.topic.Name, "publish failed on the connection; returned without an attempt", lost, "")
	}
	if unsent > 0 {
		s.log.Info("returned unpublished after an earlier batch went back, to keep the slot's order", "count", unsent)
	}
}

// retry counts an attempt of each failure, all in one Redis call: below the
// limit the message is scheduled again after its back-off, else
// dead-lettered. noDestination says some failed for a missing destination
// or no route: the retry is then logged at WARN, since only an operator can
// fix it. It returns what became of each failure (nil when Redis could not
// be written).
func (s *scanner) retry(ctx context.Context, failures []queue.Failure, noDestination bool) []queue.Outcome {
	if len(failures) == 0 {
		return nil
	}
	var outs []queue.Outcome // stays empty if Redis could not be written
	s.redisRetry(ctx, "retry", func(c context.Context) error {
		var err error
		outs, err = s.store.RetryAll(c, s.topic.Topic, s.key.slot, failures, s.cfg.MaxAttempts)
		return err
	})
	// One log line per topic, outcome and interval (internal/logrepeat): a refusal
	// storm must not flood the logs with a line per message or batch.
	var retried, dead int
	var retryReason, deadReason string
	for i, out := range outs {
		switch out {
		case queue.Retrying:
			retried++
			retryReason = failures[i].Reason
		case queue.Dead:
			dead++
			deadReason = failures[i].Reason
		}
	}
	if retried > 0 {
		s.m.Retried.WithLabelValues(s.topic.Name).Add(float64(retried))
		if noDestination {
			s.repeats.Add(slog.LevelWarn, s.topic.Name, "publish refused: destination missing or no route, will retry", retried, retryReason)
		} else {
			s.repeats.Add(slog.LevelInfo, s.topic.Name, "publish failed, will retry", retried, retryReason)
		}
	}
	if dead > 0 {
		s.m.Dead.WithLabelValues(s.topic.Name).Add(float64(dead))
		s.repeats.Add(slog.LevelWarn, s.topic.Name, "messages dead-lettered", dead, deadReason)
	}
	return outs
}
