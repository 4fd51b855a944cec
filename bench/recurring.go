package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// runRecurring: issue #30's cost target. n recurrences "@every <period>" on
// one envelope topic, set one after another through the Go API (their first
// ticks fall due over the seconds the setting took), against n one-off
// envelope messages of the same bodies due at the same instants, each
// scheduled by its own producer call (how one-off messages due at a rate
// come to be: a recurrence's next tick is written by the ack of the last,
// a one-off message by whoever wants it). Each side runs its own daemon on
// its own prefix and queue. Compared per delivered message:
//
//   - Redis: CPU and commands (inside scripts included) of the delivery
//     window, plus, for the one-off messages, of scheduling them;
//   - the daemon: CPU of the delivery window;
//   - Redis used_memory per waiting recurrence against per waiting message.
//
// Only the first tick of each recurrence is measured (full: the second is
// a minute later); its lateness is read from the tick's x-delaybridge-due.
func runRecurring(ctx context.Context, e *env) (Scenario, error) {
	n, slots, every := e.o.sizes.recurring, e.o.sizes.burstSlots, e.o.sizes.recurEvery
	r := Scenario{Messages: n}
	rec, err := e.recurringSide(ctx, n, slots, every)
	if err != nil {
		return r, fmt.Errorf("recurrences: %w", err)
	}
	one, err := e.oneOffSide(ctx, n, slots, rec.dues)
	if err != nil {
		return r, fmt.Errorf("one-off messages: %w", err)
	}
	// The scenario's own numbers are the recurrences'; the one-off
	// messages' are the reference in the notes and targets.
	r = rec.Scenario
	r.Messages = n
	c := r.costs(n)
	c.RedisBytes = rec.bytes
	oc := one.costs(n)
	write := one.write
	oneRedisUs, oneCmds := oc.RedisCPUus+write.cpuUs, oc.RedisCmds+write.cmds
	r.Notes = append(r.Notes,
		fmt.Sprintf("%d recurrences %q, %d slots, set in %s (Redis %.1f µs, %.1f commands each); first ticks due over %s",
			n, "@every "+every.String(), slots, rec.setFor.Round(time.Millisecond), rec.write.cpuUs, rec.write.cmds, spanOf(rec.dues)),
		fmt.Sprintf("per delivered tick: daemon %.1f µs, Redis %.1f µs, %.2f commands; per one-off message: daemon %.1f µs, Redis %.1f µs (%.1f delivering + %.1f scheduling), %.2f commands (%.2f + %.2f)",
			c.DaemonCPUus, c.RedisCPUus, c.RedisCmds, oc.DaemonCPUus, oneRedisUs, oc.RedisCPUus, write.cpuUs, oneCmds, oc.RedisCmds, write.cmds),
		fmt.Sprintf("one-off messages: %.0f msg/s, lateness p99 %.1f ms, %d lost, %d early; Redis used_memory %.0f bytes per waiting message",
			one.Throughput, one.Lateness.P99, one.Lost, one.Early, one.bytes),
	)
	r.target("Redis commands per tick / per one-off message (scheduled and delivered)", ratio(c.RedisCmds, oneCmds), "<=", 1, "",
		fmt.Sprintf("%.2f vs %.2f", c.RedisCmds, oneCmds))
	r.target("Redis CPU per tick / per one-off message (scheduled and delivered)", ratio(c.RedisCPUus, oneRedisUs), "<=", 1, "",
		fmt.Sprintf("%.1f vs %.1f µs", c.RedisCPUus, oneRedisUs))
	r.target("daemon CPU per tick / per one-off message", ratio(c.DaemonCPUus, oc.DaemonCPUus), "<=", 1, "",
		fmt.Sprintf("%.1f vs %.1f µs", c.DaemonCPUus, oc.DaemonCPUus))
	r.target("Redis used_memory per recurrence / per waiting one-off message", ratio(rec.bytes, one.bytes), "<=", 1, "",
		fmt.Sprintf("%.0f vs %.0f bytes", rec.bytes, one.bytes))
	// The ticks fall due as bursts (every tick of a second at its start),
	// so their lateness is the drain's: compared with the one-off
	// messages' due at the same instants ("the same lateness as any
	// message").
	r.target("tick lateness p99 / one-off message's", ratio(r.Lateness.P99, one.Lateness.P99), "<=", 1.1, "",
		fmt.Sprintf("%.1f vs %.1f ms", r.Lateness.P99, one.Lateness.P99))
	r.checkAlways()
	if one.Lost > 0 || one.Early > 0 {
		r.target("one-off messages lost or early", float64(one.Lost+one.Early), "<=", 0, "")
	}
	fmt.Fprintf(os.Stderr, "   per tick: daemon %.1f µs, Redis %.1f µs, %.2f cmds, %.0f B; per one-off: daemon %.1f µs, Redis %.1f µs, %.2f cmds, %.0f B\n",
		c.DaemonCPUus, c.RedisCPUus, c.RedisCmds, rec.bytes, oc.DaemonCPUus, oneRedisUs, oneCmds, one.bytes)
	return r, nil
}

// recurSide is one side of the recurring scenario.
type recurSide struct {
	Scenario
	dues   []time.Time   // message i's (first tick's) due time
	setFor time.Duration // how long writing them took
	write  writeCost     // Redis's cost of writing them, per message
	bytes  float64       // Redis used_memory per waiting message
}

// writeCost is what writing one message or recurrence cost Redis.
type writeCost struct{ cpuUs, cmds float64 }

// recurringSide sets n recurrences "@every every", one SetRecurrence call
// each, and measures the delivery of their first ticks; afterwards every
// one must have exactly one next tick waiting.
func (e *env) recurringSide(ctx context.Context, n, slots int, every time.Duration) (recurSide, error) {
	spec := "@every " + every.String()
	return e.side(ctx, "recurring", n, slots, e.consumeTicks, func(t queue.Topic, dues []time.Time) error {
		for i := range n {
			rc := queue.Recurrence{ID: fmt.Sprintf("r%06d", i), Spec: spec, Message: queue.Message{Body: body(i, 0, e.o.size)}}
			var err error
			if dues[i], err = e.q.SetRecurrence(ctx, t, rc); err != nil {
				return err
			}
		}
		return nil
	}, func(t queue.Topic) error { return e.checkNextTicks(ctx, t, n) })
}

// oneOffSide schedules n one-off messages due at dues shifted to start
// burstLead from now, one Schedule call each, and measures their delivery.
func (e *env) oneOffSide(ctx context.Context, n, slots int, dues []time.Time) (recurSide, error) {
	shift := time.Now().Add(burstLead(n) + 2*time.Second).Truncate(time.Millisecond).Sub(slices.MinFunc(dues, time.Time.Compare))
	return e.side(ctx, "recurring-oneoff", n, slots, e.consume, func(t queue.Topic, out []time.Time) error {
		for i := range n {
			out[i] = dues[i].Add(shift)
			m := queue.Message{ID: fmt.Sprintf("m%06d", i), Body: body(i, out[i].UnixMilli(), e.o.size)}
			if _, err := e.q.Schedule(ctx, t, m, queue.At(out[i])); err != nil {
				return err
			}
		}
		return nil
	}, nil)
}

// side is one side of the recurring scenario: a daemon on an envelope
// topic of its own, a consumer, n messages written by write (which fills
// in their due times) with Redis's cost and memory measured around it,
// their delivery measured by drainWindow, and check run afterwards.
func (e *env) side(ctx context.Context, name string, n, slots int, consume func(rabbitTarget, *tracker) (func(), error), write func(queue.Topic, []time.Time) error, check func(queue.Topic) error) (recurSide, error) {
	s := recurSide{dues: make([]time.Time, n)}
	t, d, target, drop, err := e.envelopeDaemon(ctx, name, slots)
	if err != nil {
		return s, err
	}
	defer drop()
	defer d.finish(e.o.keepLogs)
	tr := newTracker(n)
	stop, err := consume(target, tr)
	if err != nil {
		return s, err
	}
	defer stop()

	e.waitLazyFree(ctx)
	before, err := e.redisCounters(ctx)
	if err != nil {
		return s, err
	}
	start := time.Now()
	if err := write(t, s.dues); err != nil {
		return s, err
	}
	s.setFor = time.Since(start)
	after, err := e.redisCounters(ctx)
	if err != nil {
		return s, err
	}
	first, last := slices.MinFunc(s.dues, time.Time.Compare), slices.MaxFunc(s.dues, time.Time.Compare)
	if left := time.Until(first); left < 200*time.Millisecond {
		return s, fmt.Errorf("writing took too long: %s left before the first due time", left)
	}
	s.write, s.bytes = writeCostOf(before, after, n), float64(after.mem-before.mem)/float64(n)
	if err := e.drainWindow(ctx, &s.Scenario, d, tr, stop, name, first, last, 300*time.Millisecond); err != nil {
		return s, err
	}
	if check != nil {
		return s, check(t)
	}
	return s, nil
}

// envelopeDaemon is a daemon serving one envelope topic "bench" of slots
// slots under a fresh prefix; drop deletes its keys and queue.
func (e *env) envelopeDaemon(ctx context.Context, name string, slots int) (queue.Topic, *daemon, rabbitTarget, func(), error) {
	prefix, target, drop, err := e.space(name)
	if err != nil {
		return queue.Topic{}, nil, target, nil, err
	}
	vars := amqpVars(prefix, target, slots)
	vars["DELAYBRIDGE_TOPIC_BENCH_FORMAT"] = "envelope"
	d, err := startDaemon(ctx, e, vars, slots)
	if err != nil {
		drop()
		return queue.Topic{}, nil, target, nil, err
	}
	t := benchTopic(prefix, slots)
	t.Format = queue.FormatEnvelope
	return t, d, target, drop, nil
}

// checkNextTicks fails unless every one of n recurrences has its next tick
// waiting and nothing is left in flight: each delivered tick wrote exactly
// one successor.
func (e *env) checkNextTicks(ctx context.Context, t queue.Topic, n int) error {
	var waiting, inflight int64
	for slot := range t.SlotCount() {
		k := t.Keys(slot)
		w, err := e.rdb.ZCard(ctx, k.Scheduled).Result()
		if err != nil {
			return err
		}
		f, err := e.rdb.ZCard(ctx, k.Inflight).Result()
		if err != nil {
			return err
		}
		waiting, inflight = waiting+w, inflight+f
	}
	if waiting != int64(n) || inflight != 0 {
		return fmt.Errorf("after the first ticks: %d next ticks waiting and %d in flight, want %d and 0", waiting, inflight, n)
	}
	return nil
}

func writeCostOf(before, after redisCounters, n int) writeCost {
	return writeCost{
		cpuUs: round2((after.cpu - before.cpu) * 1e6 / float64(n)),
		cmds:  round2(float64(after.work-before.work) / float64(n)),
	}
}

func spanOf(ts []time.Time) time.Duration {
	return slices.MaxFunc(ts, time.Time.Compare).Sub(slices.MinFunc(ts, time.Time.Compare))
}

// consumeTicks is consume for ticks: a tick's body is the same at every
// tick, so its due time comes from its x-delaybridge-due header.
func (e *env) consumeTicks(t rabbitTarget, tr *tracker) (stop func(), err error) {
	return e.consumeWith(t, func(d amqp091.Delivery, at int64) {
		seq, _, ok := parseBody(d.Body)
		due, isInt := d.Headers[sinks.HeaderDue].(int64)
		if !ok || !isInt {
			tr.bad.Add(1)
			return
		}
		tr.record(seq, due, at)
	})
}
