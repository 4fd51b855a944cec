package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// amqpVars configure the daemon for one AMQP topic "bench" under prefix.
func amqpVars(prefix string, t rabbitTarget, slots int) map[string]string {
	return map[string]string{
		"DELAYBRIDGE_KEY_PREFIX":              prefix,
		"DELAYBRIDGE_TOPICS":                  "bench",
		"DELAYBRIDGE_TOPIC_BENCH_SINK":        "amqp",
		"DELAYBRIDGE_TOPIC_BENCH_SLOTS":       strconv.Itoa(slots),
		"DELAYBRIDGE_TOPIC_BENCH_EXCHANGE":    t.name,
		"DELAYBRIDGE_TOPIC_BENCH_ROUTING_KEY": routingKey,
	}
}

// burstLead is how far ahead a burst is scheduled: enough to write it and
// for every scanner to have looked at its slot once (poll interval 1 s).
func burstLead(n int) time.Duration {
	return 2500*time.Millisecond + time.Duration(n)*20*time.Microsecond
}

// runBurst: burst messages due at the same millisecond in burstSlots slots,
// against RabbitMQ's raw ceiling measured right before and after.
func runBurst(ctx context.Context, e *env) (Scenario, error) {
	n, slots := e.o.sizes.burst, e.o.sizes.burstSlots
	r := Scenario{Messages: n, Ceilings: map[string]float64{}}
	prefix := e.prefix("burst")
	defer e.dropKeys(prefix)
	target, err := e.declare(prefix)
	if err != nil {
		return r, err
	}
	defer e.undeclare(target)

	if rate, err := e.rawClaimAck(ctx, n, slots, 500, e.o.size); err != nil {
		r.Notes = append(r.Notes, "raw redis claim+ack: "+err.Error())
	} else {
		r.Ceilings["redis_claim_ack"] = rate
	}
	before, cpu, err := e.rawRabbit(ctx, target, n)
	if err != nil {
		return r, err
	}
	r.Ceilings["rabbitmq_confirms_before"] = before
	r.RawCPU = map[string]map[string]float64{"rabbitmq_confirms_before": cpu}

	if err := e.burstThroughDaemon(ctx, &r, prefix, amqpVars(prefix, target, slots), slots, n, func(tr *tracker) (func(), error) {
		return e.consume(target, tr)
	}); err != nil {
		return r, err
	}

	after, cpu, err := e.rawRabbit(ctx, target, n)
	if err != nil {
		return r, err
	}
	r.Ceilings["rabbitmq_confirms_after"] = after
	r.RawCPU["rabbitmq_confirms_after"] = cpu
	// The ceiling is the mean of the raw runs right before and right after
	// the daemon's: the broker's rate around the time the daemon ran.
	r.Ceiling = math.Round((before + after) / 2)
	r.Ratio = ratio(r.Throughput, r.Ceiling)
	r.Notes = append(r.Notes, fmt.Sprintf("raw RabbitMQ %.0f msg/s before and %.0f after the daemon's run; against the higher one the ratio is %.2f", before, after, ratio(r.Throughput, max(before, after))))
	return r, nil
}

// rawRabbit runs rawPublish with a consumer attached.
// It also returns the CPU each process used meanwhile.
func (e *env) rawRabbit(ctx context.Context, target rabbitTarget, n int) (float64, map[string]float64, error) {
	tr := newTracker(n)
	stop, err := e.consume(target, tr)
	if err != nil {
		return 0, nil, err
	}
	defer stop()
	m := e.meterCPU()
	rate, err := e.rawPublish(ctx, target, n, e.o.size, tr)
	if err != nil {
		return 0, nil, err
	}
	cpu := m.used()
	fmt.Fprintf(os.Stderr, "   raw rabbitmq: %.0f msg/s (cpu s %s)\n", rate, cpuText(cpu))
	return rate, cpu, nil
}

// burstThroughDaemon starts the daemon, schedules n messages due at one
// millisecond and fills r with what the consumer started by consume saw.
func (e *env) burstThroughDaemon(ctx context.Context, r *Scenario, prefix string, vars map[string]string, slots, n int, consume func(*tracker) (func(), error)) error {
	d, err := startDaemon(ctx, e, vars, slots)
	if err != nil {
		return err
	}
	defer d.finish(e.o.keepLogs)
	tr := newTracker(n)
	stop, err := consume(tr)
	if err != nil {
		return err
	}
	defer stop()

	due := time.Now().Add(burstLead(n)).Truncate(time.Millisecond)
	msgs := make([]scheduled, n)
	for i := range msgs {
		msgs[i] = scheduled{member: body(i, due.UnixMilli(), e.o.size), score: float64(due.UnixMilli())}
	}
	if err := e.schedule(ctx, benchTopic(prefix, slots), msgs); err != nil {
		return err
	}
	if left := time.Until(due); left < 200*time.Millisecond {
		return fmt.Errorf("scheduling took too long: %s left before the due time", left)
	}
	time.Sleep(time.Until(due) - 100*time.Millisecond)
	w := e.startWindow(ctx, d)
	all := tr.wait(due.Add(5*time.Minute), 20*time.Second)
	w.end(ctx, r)
	stop()
	out := tr.outcome()
	out.fill(r)
	e.dump(filepath.Base(prefix), tr)
	if out.received > 0 {
		r.Throughput = perSecond(float64(out.received), out.lastRecv.Sub(due))
	}
	if !all {
		r.Notes = append(r.Notes, fmt.Sprintf("only %d of %d arrived", out.received, n))
	}
	r.Notes = append(r.Notes, d.failures()...)
	r.Notes = append(r.Notes, d.histograms())
	fmt.Fprintf(os.Stderr, "   delaybridge: %.0f msg/s, p99 %.1f ms\n", r.Throughput, r.Lateness.P99)
	return nil
}

// runSteady: steadyRate messages/s falling due evenly for steadyFor.
func runSteady(ctx context.Context, e *env) (Scenario, error) {
	return e.steady(ctx, "steady", 0)
}

// runBacklog: steady with backlogFar other messages due hours ahead in the
// same slots.
func runBacklog(ctx context.Context, e *env) (Scenario, error) {
	return e.steady(ctx, "backlog", e.o.sizes.backlogFar)
}

// steadyLead is how long before its due time the producer writes a message:
// more than the daemon's poll interval, so a scanner of a slot that was
// empty has looked again before the message falls due.
const steadyLead = 1500 * time.Millisecond

func (e *env) steady(ctx context.Context, name string, far int) (Scenario, error) {
	s := e.o.sizes
	n := s.steadyRate * int(s.steadyFor/time.Second)
	r := Scenario{Messages: n, Ceiling: float64(s.steadyRate)}
	prefix := e.prefix(name)
	defer e.dropKeys(prefix)
	target, err := e.declare(prefix)
	if err != nil {
		return r, err
	}
	defer e.undeclare(target)
	topic := benchTopic(prefix, s.steadySlots)

	if far > 0 {
		start := time.Now()
		ahead := time.Now().Add(3 * time.Hour).UnixMilli()
		const chunk = 50_000
		for i := 0; i < far; i += chunk {
			msgs := make([]scheduled, 0, chunk)
			for j := i; j < min(i+chunk, far); j++ {
				b := body(j, ahead, e.o.size)
				b[0] = 'f' // not a benchmark message
				msgs = append(msgs, scheduled{member: b, score: float64(ahead + int64(j%3_600_000))})
			}
			if err := e.schedule(ctx, topic, msgs); err != nil {
				return r, err
			}
		}
		fmt.Fprintf(os.Stderr, "   %d messages scheduled hours ahead in %s\n", far, time.Since(start).Round(time.Millisecond))
	}

	d, err := startDaemon(ctx, e, amqpVars(prefix, target, s.steadySlots), s.steadySlots)
	if err != nil {
		return r, err
	}
	defer d.finish(e.o.keepLogs)
	tr := newTracker(n)
	stop, err := e.consume(target, tr)
	if err != nil {
		return r, err
	}
	defer stop()

	// Message i is due at t0 + i/rate; the producer writes it steadyLead
	// before, every 20 ms.
	t0 := time.Now().Add(steadyLead + 200*time.Millisecond).Truncate(time.Millisecond)
	dueOf := func(i int) time.Time {
		return t0.Add(time.Duration(i) * time.Second / time.Duration(s.steadyRate)).Truncate(time.Millisecond)
	}
	w := e.startWindow(ctx, d)
	tick := time.NewTicker(20 * time.Millisecond)
	next := 0
	for next < n {
		horizon := time.Now().Add(steadyLead)
		var msgs []scheduled
		for ; next < n && !dueOf(next).After(horizon); next++ {
			due := dueOf(next)
			msgs = append(msgs, scheduled{member: body(next, due.UnixMilli(), e.o.size), score: float64(due.UnixMilli())})
		}
		if err := e.schedule(ctx, topic, msgs); err != nil {
			tick.Stop()
			return r, err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			tick.Stop()
			return r, ctx.Err()
		}
	}
	tick.Stop()
	last := dueOf(n - 1)
	all := tr.wait(last.Add(2*time.Minute), 20*time.Second)
	w.end(ctx, &r)
	stop()
	out := tr.outcome()
	out.fill(&r)
	e.dump(name, tr)
	if out.received > 0 {
		r.Throughput = perSecond(float64(out.received), out.lastRecv.Sub(t0))
		r.Ratio = ratio(r.Throughput, r.Ceiling)
	}
	if !all {
		r.Notes = append(r.Notes, fmt.Sprintf("only %d of %d arrived", out.received, n))
	}
	r.Notes = append(r.Notes, d.failures()...)
	r.Notes = append(r.Notes, d.histograms())
	fmt.Fprintf(os.Stderr, "   delaybridge: %.0f msg/s, p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms\n", r.Throughput, r.Lateness.P50, r.Lateness.P99, r.Lateness.P999)
	d.finish(e.o.keepLogs)

	raw, err := e.rawSteady(ctx, target, n, s.steadyRate)
	if err != nil {
		return r, err
	}
	r.RawLateness = &raw
	fmt.Fprintf(os.Stderr, "   raw rabbitmq at due times: p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms\n", raw.P50, raw.P99, raw.P999)
	return r, nil
}

// runIdle: idleSlots slots, nothing due during idleFor (every other slot
// holds a message due in an hour). Redis commands and CPU are the daemon's.
func runIdle(ctx context.Context, e *env) (Scenario, error) {
	s := e.o.sizes
	r := Scenario{}
	prefix := e.prefix("idle")
	defer e.dropKeys(prefix)
	target, err := e.declare(prefix)
	if err != nil {
		return r, err
	}
	defer e.undeclare(target)
	topic := benchTopic(prefix, s.idleSlots)
	later := time.Now().Add(time.Hour).UnixMilli()
	var msgs []scheduled
	filled := map[int]bool{}
	for i := 0; len(filled) < s.idleSlots/2 && i < 100_000; i++ {
		b := body(i, later, e.o.size)
		if slot := queue.Slot(b, s.idleSlots); slot%2 == 0 && !filled[slot] {
			filled[slot] = true
			msgs = append(msgs, scheduled{member: b, score: float64(later)})
		}
	}
	if err := e.schedule(ctx, topic, msgs); err != nil {
		return r, err
	}

	d, err := startDaemon(ctx, e, amqpVars(prefix, target, s.idleSlots), s.idleSlots)
	if err != nil {
		return r, err
	}
	defer d.finish(e.o.keepLogs)
	time.Sleep(2 * time.Second) // past start-up: first claims, reaps and stats
	mon, err := startMonitor(ctx, e.o.redisURL, d.PID())
	if err != nil {
		return r, err
	}
	w := e.startWindow(ctx, d)
	select {
	case <-time.After(s.idleFor):
	case <-ctx.Done():
		mon.stop()
		return r, ctx.Err()
	}
	w.end(ctx, &r)
	calls, cmds, err := mon.stop()
	if err != nil {
		return r, err
	}
	span := time.Duration(r.WindowS * float64(time.Second))
	r.RedisCalls = perSecond(float64(calls), span)
	r.RedisCmds = perSecond(float64(cmds), span)
	r.Notes = append(r.Notes, fmt.Sprintf("daemon CPU %.2f%% of one core; %d slots, %d of them holding a message due in an hour", 100*r.DaemonCPU/r.WindowS, s.idleSlots, len(msgs)))
	r.Notes = append(r.Notes, d.failures()...)
	fmt.Fprintf(os.Stderr, "   delaybridge idle: %.2f%% CPU, %.0f redis calls/s, %.0f redis commands/s\n", 100*r.DaemonCPU/r.WindowS, r.RedisCalls, r.RedisCmds)
	return r, nil
}

// runRawRabbit measures only RabbitMQ's raw ceiling with the burst's size
// (-run raw-rabbitmq; see -raw-window).
func runRawRabbit(ctx context.Context, e *env) (Scenario, error) {
	n := e.o.sizes.burst
	r := Scenario{Messages: n}
	target, err := e.declare(e.prefix("raw-rabbitmq"))
	if err != nil {
		return r, err
	}
	defer e.undeclare(target)
	r.Throughput, r.CPU, err = e.rawRabbit(ctx, target, n)
	r.Ceiling = r.Throughput
	r.Ratio = 1
	return r, err
}
