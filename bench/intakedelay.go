package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// runIntakeDelay: steadyRate messages/s published to the intake queue for
// steadyFor, each with an x-delay uniform in 1–5 s; lateness is receive
// time − (publish time + x-delay), beside RabbitMQ's own lateness for the
// same number of messages published straight to the destination at their
// due times (as in steady).
func runIntakeDelay(ctx context.Context, e *env) (Scenario, error) {
	s := e.o.sizes
	n := s.steadyRate * int(s.steadyFor/time.Second)
	r := Scenario{Messages: n, Ceiling: float64(s.steadyRate)}
	prefix, target, drop, err := e.space("intake-delay")
	if err != nil {
		return r, err
	}
	defer drop()
	in := prefix + "-in"
	if err := e.declareQueue(in); err != nil {
		return r, err
	}
	defer e.deleteQueue(in)

	d, err := startDaemon(ctx, e, intakeVars(prefix, target, s.steadySlots, in), s.steadySlots)
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
	w := e.startWindow(ctx, d)
	pubNs, delayMs, span, err := e.publishDelayed(ctx, in, n, s.steadyRate)
	if err != nil {
		return r, err
	}
	all := tr.wait(time.Now().Add(2*time.Minute), 20*time.Second)
	w.end(ctx, &r)
	stop()
	e.dumpDelayed(tr, pubNs, delayMs)
	received, earliest := r.delayedLateness(tr, pubNs, delayMs)
	r.Duplicates = int(tr.dups.Load())
	r.Throughput = perSecond(float64(received), span)
	r.Ratio = ratio(r.Throughput, r.Ceiling)
	if !all {
		r.Notes = append(r.Notes, fmt.Sprintf("only %d of %d arrived", received, n))
	}
	if r.Early > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d early, the earliest by %.3f ms (x-delay counts from Redis's time in whole milliseconds)", r.Early, -earliest))
	}
	r.Notes = append(r.Notes, "throughput: messages received over the publishing span; lateness: receipt − (publish + x-delay)")
	r.Notes = append(r.Notes, d.failures()...)
	r.Notes = append(r.Notes, d.histograms())
	fmt.Fprintf(os.Stderr, "   delaybridge intake: p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms, max %.1f ms\n", r.Lateness.P50, r.Lateness.P99, r.Lateness.P999, r.Lateness.Max)
	d.finish(e.o.keepLogs)

	raw, err := e.rawSteady(ctx, target, n, s.steadyRate)
	if err != nil {
		return r, err
	}
	r.RawLateness = &raw
	fmt.Fprintf(os.Stderr, "   raw rabbitmq at due times: p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms\n", raw.P50, raw.P99, raw.P999)
	return r, nil
}

// delayedLateness counts r's lost and early messages and sets its lateness
// from what tr received: receipt − (publish + x-delay). It returns how many
// arrived and how early the earliest was (ms, 0 or less).
func (r *Scenario) delayedLateness(tr *tracker, pubNs, delayMs []int64) (received int, earliest float64) {
	var late []float64
	for i, at := range tr.recv {
		if at == 0 {
			r.Lost++
			continue
		}
		l := at - (pubNs[i] + delayMs[i]*int64(time.Millisecond))
		if l < 0 {
			r.Early++
			earliest = min(earliest, float64(l)/1e6)
		}
		late = append(late, float64(l)/1e6)
	}
	r.Lateness = latenessOf(late)
	return len(late), earliest
}

// publishDelayed publishes n delayed messages to queue q at rate per second
// on a confirm-mode channel, each with an x-delay uniform in 1–5 s. It
// returns each message's publish time (read right before its publish,
// Unix ns) and delay, and how long publishing took.
func (e *env) publishDelayed(ctx context.Context, q string, n, rate int) (pubNs, delayMs []int64, span time.Duration, err error) {
	conn, err := amqp091.Dial(e.o.amqpURL)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("publisher connection: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("publisher channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		return nil, nil, 0, fmt.Errorf("confirm mode: %w", err)
	}
	confirms := ch.NotifyPublish(make(chan amqp091.Confirmation, n))
	var acked, nacked atomic.Int64
	go func() {
		for c := range confirms {
			if c.Ack {
				acked.Add(1)
			} else {
				nacked.Add(1)
			}
		}
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	pubNs, delayMs = make([]int64, n), make([]int64, n)
	for i := range delayMs {
		delayMs[i] = 1000 + rng.Int64N(4001)
	}
	t0 := time.Now().Add(100 * time.Millisecond)
	sendAt := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second / time.Duration(rate)) }
	for i := 0; i < n; {
		if d := time.Until(sendAt(i)); d > 0 {
			time.Sleep(d)
		}
		for now := time.Now(); i < n && !sendAt(i).After(now); i++ {
			at := time.Now()
			pubNs[i] = at.UnixNano()
			if err := ch.PublishWithContext(ctx, "", q, false, false, delayed(i, at.UnixMilli()+delayMs[i], delayMs[i], e.o.size)); err != nil {
				return nil, nil, 0, fmt.Errorf("publish %d: %w", i, err)
			}
		}
	}
	span = time.Since(t0)
	for deadline := time.Now().Add(time.Minute); acked.Load()+nacked.Load() < int64(n); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return nil, nil, 0, fmt.Errorf("publisher: %d of %d confirms after a minute", acked.Load()+nacked.Load(), n)
		}
	}
	if k := nacked.Load(); k > 0 {
		return nil, nil, 0, fmt.Errorf("publisher: %d nacks", k)
	}
	return pubNs, delayMs, span, nil
}

// dumpDelayed writes, for every message of intake-delay, its publish time
// (Unix ns), x-delay (ms), receipt time (Unix ns, 0: lost) and lateness as
// the scenario counts it (ms) to <-dump>/intake-delay.csv: the publish
// time shows whether late messages were published together (a stall on
// the way in) or fell due together (a stall on the way out).
func (e *env) dumpDelayed(t *tracker, pubNs, delayMs []int64) {
	if e.o.dumpDir == "" {
		return
	}
	var b strings.Builder
	b.WriteString("seq,publish_ns,delay_ms,receipt_ns,lateness_ms\n")
	for i, at := range t.recv {
		late := 0.0
		if at != 0 {
			late = float64(at-(pubNs[i]+delayMs[i]*int64(time.Millisecond))) / 1e6
		}
		fmt.Fprintf(&b, "%d,%d,%d,%d,%.3f\n", i, pubNs[i], delayMs[i], at, late)
	}
	path := filepath.Join(e.o.dumpDir, "intake-delay.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "   dump:", err)
	}
}
