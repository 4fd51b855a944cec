package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

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
	return e.steadyThrough(ctx, name, far, s.steadyFor, nil, func(r *Scenario, target rabbitTarget, n int) error {
		return e.steadyAgainstRaw(ctx, r, target, n, s.steadyRate, far)
	})
}

// steadyThrough is steady traffic for steadyFor through one daemon, whose
// environment has extra on top of the topic's variables (nil: none; the
// -daemon-env variables still win), then, while the scenario's exchange and
// queue still exist, after (nil: nothing). It stops the daemon before after.
func (e *env) steadyThrough(ctx context.Context, name string, far int, steadyFor time.Duration, extra map[string]string,
	after func(r *Scenario, target rabbitTarget, n int) error) (Scenario, error) {
	s := e.o.sizes
	n := s.steadyRate * int(steadyFor/time.Second)
	r := Scenario{Messages: n, Ceiling: float64(s.steadyRate)}
	prefix, target, drop, err := e.space(name)
	if err != nil {
		return r, err
	}
	defer drop()
	topic := benchTopic(prefix, s.steadySlots)

	var farBytes float64
	if far > 0 {
		if farBytes, err = e.loadFar(ctx, topic, far); err != nil {
			return r, err
		}
	}

	vars := amqpVars(prefix, target, s.steadySlots)
	maps.Copy(vars, extra)
	d, err := startDaemon(ctx, e, vars, s.steadySlots)
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
	if err := e.produceSteady(ctx, topic, n, dueOf); err != nil {
		return r, err
	}
	last := dueOf(n - 1)
	all := tr.wait(last.Add(2*time.Minute), 20*time.Second)
	w.end(ctx, &r)
	stop()
	e.steadyOutcome(&r, name, tr, d, t0, all)
	fmt.Fprintf(os.Stderr, "   delaybridge: %.0f msg/s, p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms\n", r.Throughput, r.Lateness.P50, r.Lateness.P99, r.Lateness.P999)
	d.finish(e.o.keepLogs)
	c := r.costs(n)
	c.RedisBytes = farBytes
	fmt.Fprintf(os.Stderr, "   per message: daemon %.1f µs CPU, redis %.1f µs CPU, %.2f redis commands\n", c.DaemonCPUus, c.RedisCPUus, c.RedisCmds)

	if after != nil {
		if err := after(&r, target, n); err != nil {
			return r, err
		}
	}
	return r, nil
}

// steadyOutcome fills r from what tr received of messages due from t0 on,
// all reporting whether every one arrived, and from the daemon's notes.
func (e *env) steadyOutcome(r *Scenario, name string, tr *tracker, d *daemon, t0 time.Time, all bool) {
	out := tr.outcome()
	out.fill(r)
	e.dump(name, tr)
	if out.received > 0 {
		r.Throughput = perSecond(float64(out.received), out.lastRecv.Sub(t0))
		r.Ratio = ratio(r.Throughput, r.Ceiling)
	}
	if !all {
		r.Notes = append(r.Notes, fmt.Sprintf("only %d of %d arrived", out.received, r.Messages))
	}
	r.Notes = append(r.Notes, d.failures()...)
	r.Notes = append(r.Notes, d.histograms())
}

// produceSteady writes message i of n, due at dueOf(i), steadyLead before
// it falls due, every 20 ms.
func (e *env) produceSteady(ctx context.Context, topic queue.Topic, n int, dueOf func(int) time.Time) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	next := 0
	for next < n {
		horizon := time.Now().Add(steadyLead)
		var msgs []scheduled
		for ; next < n && !dueOf(next).After(horizon); next++ {
			due := dueOf(next)
			msgs = append(msgs, scheduled{member: body(next, due.UnixMilli(), e.o.size), score: float64(due.UnixMilli())})
		}
		if err := e.schedule(ctx, topic, msgs); err != nil {
			return err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// steadyAgainstRaw publishes the same n messages with raw RabbitMQ at their
// due times and records r's targets against it: steady's, or backlog's when
// far messages were loaded.
func (e *env) steadyAgainstRaw(ctx context.Context, r *Scenario, target rabbitTarget, n, rate, far int) error {
	raw, err := e.rawSteady(ctx, target, n, rate)
	if err != nil {
		return err
	}
	r.RawLateness = &raw
	fmt.Fprintf(os.Stderr, "   raw rabbitmq at due times: p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms\n", raw.P50, raw.P99, raw.P999)
	rawText := fmt.Sprintf("raw RabbitMQ, same messages at their due times: p99 %.1f ms, p99.9 %.1f ms", raw.P99, raw.P999)
	if far == 0 {
		r.steadyTargets(rawText)
		e.steadyRun = r
	} else {
		e.backlogTargets(r, far, rawText)
	}
	r.checkAlways()
	return nil
}

// steadyTargets records steady's targets of issue #15.
func (r *Scenario) steadyTargets(rawText string) {
	c := r.PerMessage
	r.target("daemon CPU per message", c.DaemonCPUus, "<=", 50, "µs")
	r.target("Redis CPU per message", c.RedisCPUus, "<=", 30, "µs")
	r.target("Redis commands per message (scripts' and the producer's ZADD included)", c.RedisCmds, "<=", 5, "")
	r.target("lateness p99", r.Lateness.P99, "<=", 3, "ms", rawText)
	r.target("lateness p99.9", r.Lateness.P999, "<=", 10, "ms", rawText)
}

// backlogTargets compares backlog with steady of the same run: throughput
// and lateness within 10 %.
func (e *env) backlogTargets(r *Scenario, far int, rawText string) {
	r.Notes = append(r.Notes, fmt.Sprintf("%d far-future messages waiting: Redis used_memory %.0f bytes per waiting message", far, r.PerMessage.RedisBytes))
	st := e.steadyRun
	if st == nil {
		r.Notes = append(r.Notes, "steady did not run in this run (-run): no comparison with it")
		return
	}
	r.target("throughput / steady's", ratio(r.Throughput, st.Throughput), ">=", 0.9, "", fmt.Sprintf("steady %.0f msg/s", st.Throughput))
	r.target("lateness p99 / steady's", ratio(r.Lateness.P99, st.Lateness.P99), "<=", 1.1, "", fmt.Sprintf("steady p99 %.1f ms; %s", st.Lateness.P99, rawText))
	r.target("lateness p99.9 / steady's", ratio(r.Lateness.P999, st.Lateness.P999), "<=", 1.1, "", fmt.Sprintf("steady p99.9 %.1f ms", st.Lateness.P999))
	r.target("daemon CPU per message / steady's", ratio(r.PerMessage.DaemonCPUus, st.PerMessage.DaemonCPUus), "<=", 1.1, "", fmt.Sprintf("%.1f vs %.1f µs", r.PerMessage.DaemonCPUus, st.PerMessage.DaemonCPUus))
}

// loadFar schedules far messages hours ahead in t, with pipelined
// multi-member ZADDs from two writers, and returns Redis's used_memory per
// message they added.
func (e *env) loadFar(ctx context.Context, t queue.Topic, far int) (float64, error) {
	e.waitLazyFree(ctx)
	before, err := e.redisCounters(ctx)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	ahead := time.Now().Add(3 * time.Hour).UnixMilli()
	const chunk = 50_000
	const writers = 2
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := g * chunk; i < far && errs[g] == nil; i += writers * chunk {
				msgs := make([]scheduled, 0, chunk)
				for j := i; j < min(i+chunk, far); j++ {
					b := body(j, ahead, e.o.size)
					b[0] = 'f' // not a benchmark message
					msgs = append(msgs, scheduled{member: b, score: float64(ahead + int64(j%3_600_000))})
				}
				errs[g] = e.schedule(ctx, t, msgs)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	after, err := e.redisCounters(ctx)
	if err != nil {
		return 0, err
	}
	perMsg := math.Round(float64(after.mem-before.mem) / float64(far))
	fmt.Fprintf(os.Stderr, "   %d messages scheduled hours ahead in %s; Redis used_memory +%.0f bytes each\n", far, time.Since(start).Round(time.Millisecond), perMsg)
	return perMsg, nil
}

// waitLazyFree waits (up to 30 s) until Redis has freed what earlier
// UNLINKs left to its background thread, so used_memory deltas are the
// scenario's own.
func (e *env) waitLazyFree(ctx context.Context) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		info, err := e.rdb.Info(ctx, "memory").Result()
		if err != nil || strings.Contains(info, "lazyfree_pending_objects:0\r\n") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
