package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"
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
	return e.burst(ctx, "burst", 0)
}

// burstSpread is how long burst-spread's messages take to fall due.
const burstSpread = 2 * time.Second

// runBurstSpread: the burst's messages falling due evenly over burstSpread
// instead of at one instant, against the same raw ceiling.
func runBurstSpread(ctx context.Context, e *env) (Scenario, error) {
	return e.burst(ctx, "burst-spread", burstSpread)
}

func (e *env) burst(ctx context.Context, name string, spread time.Duration) (Scenario, error) {
	n, slots := e.o.sizes.burst, e.o.sizes.burstSlots
	r := Scenario{Messages: n, Ceilings: map[string]float64{}}
	prefix, target, drop, err := e.space(name)
	if err != nil {
		return r, err
	}
	defer drop()

	if rate, err := e.rawClaimAck(ctx, n, slots, 500, e.o.size); err != nil {
		r.Notes = append(r.Notes, "raw redis claim+ack: "+err.Error())
	} else {
		r.Ceilings["redis_claim_ack"] = rate
	}
	before, after, err := e.aroundRaw(ctx, &r, target, n, func() error {
		return e.burstThroughDaemon(ctx, &r, prefix, amqpVars(prefix, target, slots), slots, n, spread, func(tr *tracker) (func(), error) {
			return e.consume(target, tr)
		})
	})
	if err != nil {
		return r, err
	}
	higher := max(before, after)
	if spread > 0 {
		// Messages falling due over spread cannot arrive faster than that.
		offered := perSecond(float64(n), spread)
		r.Ceilings["offered"] = offered
		if offered < r.Ceiling {
			r.Notes = append(r.Notes, fmt.Sprintf("the offered rate %.0f msg/s is below the raw RabbitMQ ceiling %.0f: the ceiling is the offered rate", offered, r.Ceiling))
			r.Ceiling, higher = offered, offered
		}
	}
	r.Ratio = ratio(r.Throughput, r.Ceiling)
	r.Notes = append(r.Notes, fmt.Sprintf("raw RabbitMQ %.0f msg/s before and %.0f after the daemon's run; against the higher one the ratio is %.2f", before, after, ratio(r.Throughput, higher)))
	r.rabbitCosts(n)
	r.target("throughput / raw RabbitMQ ceiling", r.Ratio, ">=", 0.9, "", fmt.Sprintf("%.0f vs %.0f msg/s", r.Throughput, r.Ceiling))
	if c := r.PerMessage; c.RabbitCPURatio > 0 {
		r.target("RabbitMQ CPU per message under delaybridge / under the raw publisher", c.RabbitCPURatio, "<=", 1.1, "", fmt.Sprintf("%.1f vs %.1f µs", c.RabbitCPUus, c.RawRabbitCPUus))
	}
	r.checkAlways()
	if name == "burst" {
		e.burstRun = &r
	}
	return r, nil
}

// aroundRaw runs run between two measurements of RabbitMQ's raw ceiling
// with n messages to target, and records both in r: Ceilings, RawCPU, and
// as Ceiling their mean, the broker's rate around the time run ran.
func (e *env) aroundRaw(ctx context.Context, r *Scenario, target rabbitTarget, n int, run func() error) (before, after float64, err error) {
	before, cpu, err := e.rawRabbit(ctx, target, n)
	if err != nil {
		return 0, 0, err
	}
	r.Ceilings["rabbitmq_confirms_before"] = before
	r.RawCPU = map[string]map[string]float64{"rabbitmq_confirms_before": cpu}
	if err := run(); err != nil {
		return 0, 0, err
	}
	after, cpu, err = e.rawRabbit(ctx, target, n)
	if err != nil {
		return 0, 0, err
	}
	r.Ceilings["rabbitmq_confirms_after"] = after
	r.RawCPU["rabbitmq_confirms_after"] = cpu
	r.Ceiling = math.Round((before + after) / 2)
	return before, after, nil
}

// rabbitCosts fills the per-message costs of a burst of n: the daemon's and
// Redis's over the window (the producer's ZADDs, written before it, are
// not in it), and RabbitMQ's under the daemon and under the raw publisher.
func (r *Scenario) rabbitCosts(n int) {
	c := r.costs(n)
	if c == nil {
		return
	}
	r.Notes = append(r.Notes, "per-message costs are over the daemon's window only: the producer's ZADDs, written before it, are not in them")
	rawBefore, ok1 := r.RawCPU["rabbitmq_confirms_before"]["rabbitmq"]
	rawAfter, ok2 := r.RawCPU["rabbitmq_confirms_after"]["rabbitmq"]
	daemon, ok3 := r.CPU["rabbitmq"]
	if !ok1 || !ok2 || !ok3 {
		r.Notes = append(r.Notes, "RabbitMQ's CPU is not measured: no beam.smp process on this machine")
		return
	}
	c.RabbitCPUus = round2(daemon * 1e6 / float64(n))
	c.RawRabbitCPUus = round2((rawBefore + rawAfter) / 2 * 1e6 / float64(n))
	c.RabbitCPURatio = ratio(c.RabbitCPUus, c.RawRabbitCPUus)
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
func (e *env) burstThroughDaemon(ctx context.Context, r *Scenario, prefix string, vars map[string]string, slots, n int, spread time.Duration, consume func(*tracker) (func(), error)) error {
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
		at := due.Add(spread * time.Duration(i) / time.Duration(n)).UnixMilli()
		msgs[i] = scheduled{member: body(i, at, e.o.size), score: float64(at)}
	}
	if err := e.schedule(ctx, benchTopic(prefix, slots), msgs); err != nil {
		return err
	}
	if left := time.Until(due); left < 200*time.Millisecond {
		return fmt.Errorf("scheduling took too long: %s left before the due time", left)
	}
	return e.drainWindow(ctx, r, d, tr, stop, filepath.Base(prefix), due, due.Add(spread), 0)
}

// drainWindow measures the delivery of tr's messages, due from first to
// last: the window opens just before first and closes settle after every
// message arrived (or none arrived for 20 s; settle lets the last acks
// land), then stop ends the consumer. Throughput counts from first.
func (e *env) drainWindow(ctx context.Context, r *Scenario, d *daemon, tr *tracker, stop func(), name string, first, last time.Time, settle time.Duration) error {
	if !sleepUntil(ctx, first.Add(-100*time.Millisecond)) {
		return ctx.Err()
	}
	w := e.startWindow(ctx, d)
	all := tr.wait(last.Add(5*time.Minute), 20*time.Second)
	sleep(ctx, settle)
	w.end(ctx, r)
	r.Batches = d.batches("bench")
	stop()
	out := tr.outcome()
	out.fill(r)
	e.dump(name, tr)
	if out.received > 0 {
		r.Throughput = perSecond(float64(out.received), out.lastRecv.Sub(first))
	}
	if !all {
		r.Notes = append(r.Notes, fmt.Sprintf("only %d of %d arrived", out.received, tr.n))
	}
	r.Notes = append(r.Notes, d.failures()...)
	r.Notes = append(r.Notes, d.histograms())
	fmt.Fprintf(os.Stderr, "   delaybridge: %.0f msg/s, p99 %.1f ms\n", r.Throughput, r.Lateness.P99)
	return nil
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
