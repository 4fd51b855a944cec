package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
)

// intakePrefetch is the prefetch of the daemon's AMQP intake and of the raw
// consumer it is compared with (the intake's default).
const intakePrefetch = 256

// intakeVars configure the daemon for one envelope topic "bench" under
// prefix that publishes to t and takes its messages from the queue in.
func intakeVars(prefix string, t rabbitTarget, slots int, in string) map[string]string {
	v := amqpVars(prefix, t, slots)
	v["DELAYBRIDGE_TOPIC_BENCH_FORMAT"] = "envelope"
	v["DELAYBRIDGE_TOPIC_BENCH_INTAKE"] = "amqp"
	v["DELAYBRIDGE_TOPIC_BENCH_INTAKE_QUEUE"] = in
	v["DELAYBRIDGE_TOPIC_BENCH_INTAKE_PREFETCH"] = strconv.Itoa(intakePrefetch)
	return v
}

// declareQueue declares a durable classic queue bound to nothing: producers
// reach it through the default exchange, as they would an intake queue.
func (e *env) declareQueue(name string) error {
	ch, err := e.amqp.Channel()
	if err != nil {
		return fmt.Errorf("channel: %w", err)
	}
	defer ch.Close()
	if _, err := ch.QueueDeclare(name, true, false, false, false, amqp091.Table{"x-queue-type": "classic"}); err != nil {
		return fmt.Errorf("declare queue %s: %w", name, err)
	}
	return nil
}

func (e *env) deleteQueue(name string) {
	if ch, err := e.amqp.Channel(); err == nil {
		ch.QueueDelete(name, false, false, false)
		ch.Close()
	}
}

// queueState is the ready messages and consumers of a queue.
func (e *env) queueState(name string) (amqp091.Queue, error) {
	ch, err := e.amqp.Channel()
	if err != nil {
		return amqp091.Queue{}, err
	}
	defer ch.Close()
	return ch.QueueDeclarePassive(name, true, false, false, false, amqp091.Table{"x-queue-type": "classic"})
}

// delayed is message seq as a producer of the delayed-message plugin sends
// it: persistent, an x-delay header, no message id. Its body says it is due
// at dueMs.
func delayed(seq int, dueMs, delayMs int64, size int) amqp091.Publishing {
	return amqp091.Publishing{
		Headers:      amqp091.Table{"x-delay": delayMs},
		DeliveryMode: amqp091.Persistent,
		Body:         body(seq, dueMs, size),
	}
}

// fillQueue publishes n delayed messages, due at once, to queue q on one
// confirm-mode channel (-raw-window unconfirmed) and returns when the broker
// confirmed them all.
func (e *env) fillQueue(ctx context.Context, q string, n int) (time.Duration, error) {
	conn, err := amqp091.Dial(e.o.amqpURL)
	if err != nil {
		return 0, fmt.Errorf("filler connection: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, fmt.Errorf("filler channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		return 0, fmt.Errorf("confirm mode: %w", err)
	}
	confirms := ch.NotifyPublish(make(chan amqp091.Confirmation, e.o.rawWindow+1))
	window := make(chan struct{}, e.o.rawWindow)
	done := make(chan error, 1)
	go func() {
		got, nacks := 0, 0
		for c := range confirms {
			if !c.Ack {
				nacks++
			}
			<-window
			if got++; got == n {
				if nacks > 0 {
					done <- fmt.Errorf("filler: %d nacks", nacks)
				}
				close(done)
				return
			}
		}
		done <- errors.New("filler: channel closed before every confirm")
	}()
	start := time.Now()
	for i := range n {
		select {
		case window <- struct{}{}:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		now := time.Now().UnixMilli()
		if err := ch.PublishWithContext(ctx, "", q, false, false, delayed(i, now, 0, e.o.size)); err != nil {
			return 0, fmt.Errorf("fill %s: %w", q, err)
		}
	}
	select {
	case err := <-done:
		return time.Since(start), err
	case <-time.After(2 * time.Minute):
		return 0, errors.New("filler: confirms missing after 2 min")
	}
}

// rawIntake measures the ceiling of an intake: n delayed messages in queue
// q, consumed with the intake's prefetch and acknowledged one by one as
// the intake does, with nothing done in between. It returns messages per
// second from the consume to the last ack, and the CPU each process used.
func (e *env) rawIntake(ctx context.Context, q string, n int) (float64, map[string]float64, error) {
	if _, err := e.fillQueue(ctx, q, n); err != nil {
		return 0, nil, err
	}
	conn, err := amqp091.Dial(e.o.amqpURL)
	if err != nil {
		return 0, nil, fmt.Errorf("raw consumer connection: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, nil, fmt.Errorf("raw consumer channel: %w", err)
	}
	if err := ch.Qos(intakePrefetch, 0, false); err != nil {
		return 0, nil, fmt.Errorf("prefetch: %w", err)
	}
	m := e.meterCPU()
	start := time.Now()
	deliveries, err := ch.Consume(q, "", false, false, false, false, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("consume %s: %w", q, err)
	}
	for got := 0; got < n; got++ {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return 0, nil, fmt.Errorf("raw consumer: deliveries ended after %d of %d", got, n)
			}
			if err := d.Ack(false); err != nil {
				return 0, nil, fmt.Errorf("raw consumer ack: %w", err)
			}
		case <-time.After(30 * time.Second):
			return 0, nil, fmt.Errorf("raw consumer: %d of %d after a 30 s silence", got, n)
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	}
	rate := perSecond(float64(n), time.Since(start))
	cpu := m.used()
	fmt.Fprintf(os.Stderr, "   raw consume+ack: %.0f msg/s (cpu s %s)\n", rate, cpuText(cpu))
	return rate, cpu, nil
}

// consumerAttached polls queue q until it has a consumer and sends when
// it first saw one (every 2 ms: the start of the intake's work).
func (e *env) consumerAttached(ctx context.Context, q string) <-chan time.Time {
	out := make(chan time.Time, 1)
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			if s, err := e.queueState(q); err == nil && s.Consumers > 0 {
				out <- time.Now()
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return out
}

// scheduledBy counts what t's scheduled sets hold every 10 ms until it
// reaches n (t is paused: nothing leaves them) and returns when it first
// saw it.
func (e *env) scheduledBy(ctx context.Context, t queue.Topic, n int, deadline time.Time) (time.Time, error) {
	for first := true; ; first = false {
		got, err := e.waiting(ctx, t)
		if err == nil && got >= int64(n) {
			if first {
				return time.Now(), errors.New("every message was scheduled before the first look")
			}
			return time.Now(), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("intake scheduled %d of %d (%v)", got, n, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waiting is how many messages t's scheduled sets hold (one pipelined
// ZCARD per slot).
func (e *env) waiting(ctx context.Context, t queue.Topic) (int64, error) {
	cmds := make([]*redis.IntCmd, t.Slots)
	_, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range t.Slots {
			cmds[i] = p.ZCard(ctx, t.Keys(i).Scheduled)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("count scheduled: %w", err)
	}
	var sum int64
	for _, c := range cmds {
		sum += c.Val()
	}
	return sum, nil
}

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
	var late []float64
	earliest := 0.0
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
	r.Duplicates = int(tr.dups.Load())
	r.Throughput = perSecond(float64(len(late)), span)
	r.Ratio = ratio(r.Throughput, r.Ceiling)
	if !all {
		r.Notes = append(r.Notes, fmt.Sprintf("only %d of %d arrived", len(late), n))
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
