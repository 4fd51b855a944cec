package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"time"
)

// runIntake: intake messages with x-delay 0 waiting in the intake queue
// before the daemon starts; the rate at which the daemon schedules them in
// Redis, against a plain consumer's consume-and-ack rate measured right
// before and after on the same queue.
func runIntake(ctx context.Context, e *env) (Scenario, error) {
	n, slots := e.o.sizes.intake, e.o.sizes.steadySlots
	r := Scenario{Messages: n, Ceilings: map[string]float64{}, RawCPU: map[string]map[string]float64{}}
	prefix, target, drop, err := e.space("intake")
	if err != nil {
		return r, err
	}
	defer drop()
	in := prefix + "-in"
	if err := e.declareQueue(in); err != nil {
		return r, err
	}
	defer e.deleteQueue(in)

	before, cpu, err := e.rawIntake(ctx, in, n)
	if err != nil {
		return r, err
	}
	r.Ceilings["amqp_consume_ack_before"], r.RawCPU["amqp_consume_ack_before"] = before, cpu

	if err := e.intakeThroughDaemon(ctx, &r, prefix, target, in, slots, n); err != nil {
		return r, err
	}

	after, cpu, err := e.rawIntake(ctx, in, n)
	if err != nil {
		return r, err
	}
	r.Ceilings["amqp_consume_ack_after"], r.RawCPU["amqp_consume_ack_after"] = after, cpu
	r.Ceiling = math.Round((before + after) / 2)
	r.Ratio = ratio(r.Throughput, r.Ceiling)
	r.Notes = append(r.Notes, fmt.Sprintf("raw consume+ack (prefetch %d, ack per delivery) %.0f msg/s before and %.0f after the daemon's run; against the higher one the ratio is %.2f", intakePrefetch, before, after, ratio(r.Throughput, max(before, after))))
	return r, nil
}

// intakeThroughDaemon fills the intake queue, starts the daemon and fills
// r: Throughput is n over the span from the intake's consumer attaching to
// the topic's scheduled sets holding n (every message in Redis; the intake
// acks right after). The messages also flow on to the
// destination, where the consumer checks that none is lost.
func (e *env) intakeThroughDaemon(ctx context.Context, r *Scenario, prefix string, target rabbitTarget, in string, slots, n int) error {
	took, err := e.fillQueue(ctx, in, n)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "   %d messages in the intake queue in %s\n", n, took.Round(time.Millisecond))
	tr := newTracker(n)
	stop, err := e.consume(target, tr)
	if err != nil {
		return err
	}
	defer stop()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	attached := e.consumerAttached(wctx, in)
	// The topic is paused while the intake fills it, so the rate is the
	// intake's alone (the forwarder publishing the same messages to the
	// same RabbitMQ at once would be measured with it), and counting what
	// waits in Redis costs the daemon nothing (its /metrics is expensive
	// to poll every 10 ms). Resumed once all are in: delivery is checked.
	topic := benchTopic(prefix, slots)
	if err := e.q.Pause(ctx, topic, "bench: the intake is measured alone"); err != nil {
		return fmt.Errorf("pause the intake topic: %w", err)
	}
	d, err := startDaemon(ctx, e, intakeVars(prefix, target, slots, in), slots)
	if err != nil {
		return err
	}
	defer d.finish(e.o.keepLogs)
	w := e.startWindow(ctx, d)
	var start time.Time
	select {
	case start = <-attached:
	case <-time.After(startTimeout):
	}
	if start.IsZero() {
		return errors.New("the intake never consumed its queue")
	}
	end, err := e.scheduledBy(ctx, topic, n, time.Now().Add(5*time.Minute))
	if err != nil {
		return err
	}
	if _, err := e.q.Resume(ctx, topic); err != nil {
		return fmt.Errorf("resume the intake topic: %w", err)
	}
	r.Throughput = perSecond(float64(n), end.Sub(start))
	all := tr.wait(time.Now().Add(2*time.Minute), 20*time.Second)
	w.end(ctx, r)
	r.DaemonCPU = round2(d.cpu().Seconds()) // since launch: the intake starts before the window
	stop()
	out := tr.outcome()
	r.Early, r.Lost, r.Duplicates = out.early, out.lost, out.dups
	if q, err := e.queueState(in); err == nil && q.Messages > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d messages still ready in the intake queue", q.Messages))
	}
	if !all {
		r.Notes = append(r.Notes, fmt.Sprintf("only %d of %d reached the destination", out.received, n))
	}
	if out.received > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("end to end (intake queue to destination consumer): %.0f msg/s; daemon CPU is since its launch", perSecond(float64(out.received), out.lastRecv.Sub(start))))
	}
	r.Notes = append(r.Notes, d.failures()...)
	fmt.Fprintf(os.Stderr, "   delaybridge intake: %.0f msg/s scheduled\n", r.Throughput)
	return nil
}
