package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// The fairness scenario's two topics, served by one daemon: a burst and a
// trickle of messages that fall due while the burst drains.
const (
	fairBurst   = "burst"
	fairTrickle = "trickle"
)

// trickleLead is how long before its due time the trickle's producer writes
// a message; trickleTail how long the trickle goes on after the burst
// drained; trickleMax bounds the trickle's length (messages: rate × it).
const (
	trickleLead = time.Second
	trickleTail = time.Second
	trickleMax  = 10 * time.Minute
)

// fairTrickleP99 is issue #26's bound on the trickle's lateness p99 while
// the burst drains (ms), and fairBurstShare the least share of the burst
// scenario's throughput the burst topic must keep beside the trickle.
const (
	fairTrickleP99 = 50
	fairBurstShare = 0.95
)

// runFairness: one daemon serving two topics through RabbitMQ, each to a
// queue and consumer of its own. The trickle topic (1 slot) receives
// fairRate messages/s, each written trickleLead before it falls due, from
// before the burst falls due until trickleTail after it drained; the burst
// topic (burstSlots slots) has fairBurst messages due at one millisecond.
// The headline is the trickle's lateness while the burst drains (due from
// the burst's due time to its last receipt): a burst in one topic must not
// hold another topic's due messages behind it. Throughput is the burst
// topic's, against the burst scenario's of the same run.
func runFairness(ctx context.Context, e *env) (Scenario, error) {
	return e.fairness(ctx, "fairness", false)
}

// runFairnessRaw (not run by default) is fairness with the trickle
// published by the bench straight to RabbitMQ at its due times, the daemon
// serving both topics all the same: the trickle's lateness that the broker
// and this machine cause while the daemon drains the burst, with no
// delaybridge in the trickle's path.
func runFairnessRaw(ctx context.Context, e *env) (Scenario, error) {
	return e.fairness(ctx, "fairness-raw", true)
}

func (e *env) fairness(ctx context.Context, name string, raw bool) (Scenario, error) {
	s := e.o.sizes
	n, slots := s.fairBurst, s.burstSlots
	r := Scenario{Messages: n, Ceilings: map[string]float64{}}
	prefix, burstTarget, drop, err := e.space(name)
	if err != nil {
		return r, err
	}
	defer drop()
	trickleTarget, err := e.declare(prefix + "-" + fairTrickle)
	if err != nil {
		return r, err
	}
	defer e.undeclare(trickleTarget)
	burst := queue.Topic{Name: fairBurst, Prefix: prefix, Slots: slots}
	trickle := queue.Topic{Name: fairTrickle, Prefix: prefix, Slots: 1}
	vars := map[string]string{"DELAYBRIDGE_KEY_PREFIX": prefix, "DELAYBRIDGE_TOPICS": fairBurst + "," + fairTrickle}
	topicVars(vars, burst, burstTarget)
	topicVars(vars, trickle, trickleTarget)
	d, err := startDaemonTopics(ctx, e, vars, map[string]int{fairBurst: slots, fairTrickle: 1})
	if err != nil {
		return r, err
	}
	defer d.finish(e.o.keepLogs)
	btr, ttr := newTracker(n), newTracker(s.fairRate*int(trickleMax/time.Second))
	stopBurst, err := e.consume(burstTarget, btr)
	if err != nil {
		return r, err
	}
	defer stopBurst()
	stopTrickle, err := e.consume(trickleTarget, ttr)
	if err != nil {
		return r, err
	}
	defer stopTrickle()

	f := fairRun{e: e, d: d, r: &r, raw: raw, trickleTarget: trickleTarget, burst: burst, trickle: trickle, btr: btr, ttr: ttr}
	if err := f.drive(ctx); err != nil {
		return r, err
	}
	stopBurst()
	stopTrickle()
	f.results()
	return r, nil
}

// topicVars adds the daemon's settings for topic t, published to target.
func topicVars(vars map[string]string, t queue.Topic, target rabbitTarget) {
	v := "DELAYBRIDGE_TOPIC_" + strings.ToUpper(t.Name) + "_"
	vars[v+"SINK"], vars[v+"SLOTS"] = "amqp", strconv.Itoa(t.Slots)
	vars[v+"EXCHANGE"], vars[v+"ROUTING_KEY"] = target.name, routingKey
}

// fairRun is one run of the fairness scenario.
type fairRun struct {
	e              *env
	d              *daemon
	r              *Scenario
	raw            bool // the bench publishes the trickle to RabbitMQ itself
	trickleTarget  rabbitTarget
	burst, trickle queue.Topic
	btr, ttr       *tracker
	due            time.Time // the burst's due time
	produced       int       // trickle messages written
	allBurst       bool
	allTrickle     bool
}

// drive starts the trickle, schedules the burst, and waits until the burst
// drained and every trickle message written arrived; the window spans the
// burst's drain and the trickle's tail.
func (f *fairRun) drive(ctx context.Context) error {
	rate := f.e.o.sizes.fairRate
	t0 := time.Now().Add(trickleLead + 200*time.Millisecond).Truncate(time.Millisecond)
	dueOf := func(i int) time.Time {
		return t0.Add(time.Duration(i) * time.Second / time.Duration(rate)).Truncate(time.Millisecond)
	}
	pctx, stopProducing := context.WithCancel(ctx)
	defer stopProducing()
	type result struct {
		n   int
		err error
	}
	produced := make(chan result, 1)
	go func() {
		produce := func() (int, error) { return f.e.produceUntil(pctx, f.trickle, f.ttr.n, trickleLead, dueOf) }
		if f.raw {
			produce = func() (int, error) { return f.e.rawUntil(pctx, f.trickleTarget, f.ttr.n, dueOf) }
		}
		n, err := produce()
		produced <- result{n, err}
	}()

	n := f.btr.n
	f.due = time.Now().Add(burstLead(n)).Truncate(time.Millisecond)
	msgs := make([]scheduled, n)
	for i := range msgs {
		msgs[i] = scheduled{member: body(i, f.due.UnixMilli(), f.e.o.size), score: float64(f.due.UnixMilli())}
	}
	if err := f.e.schedule(ctx, f.burst, msgs); err != nil {
		return err
	}
	if left := time.Until(f.due); left < 200*time.Millisecond {
		return fmt.Errorf("scheduling took too long: %s left before the due time", left)
	}
	time.Sleep(time.Until(f.due) - 100*time.Millisecond)
	w := f.e.startWindow(ctx, f.d)
	f.allBurst = f.btr.wait(f.due.Add(5*time.Minute), 20*time.Second)
	time.Sleep(trickleTail)
	stopProducing()
	p := <-produced
	if p.err != nil && !errors.Is(p.err, context.Canceled) {
		return p.err
	}
	f.produced = p.n
	f.allTrickle = f.ttr.waitFor(p.n, time.Now().Add(time.Minute), 10*time.Second)
	w.end(ctx, f.r)
	return ctx.Err()
}

// produceUntil writes message i of at most n, due at dueOf(i), lead before
// it falls due, every 20 ms, until ctx ends; it returns how many it wrote.
func (e *env) produceUntil(ctx context.Context, t queue.Topic, n int, lead time.Duration, dueOf func(int) time.Time) (int, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	next := 0
	for next < n {
		horizon := time.Now().Add(lead)
		var msgs []scheduled
		from := next
		for ; next < n && !dueOf(next).After(horizon); next++ {
			due := dueOf(next)
			msgs = append(msgs, scheduled{member: body(next, due.UnixMilli(), e.o.size), score: float64(due.UnixMilli())})
		}
		// Not the scenario's context: a write cut short would leave
		// messages counted as written that Redis never got.
		if err := e.schedule(context.WithoutCancel(ctx), t, msgs); err != nil {
			return from, err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return next, ctx.Err()
		}
	}
	return next, nil
}

// results fills the scenario from the two trackers.
func (f *fairRun) results() {
	r, e := f.r, f.e
	bo := f.btr.outcome()
	f.ttr.truncate(f.produced)
	to := f.ttr.outcome()
	e.dump("fairness-"+fairBurst, f.btr)
	e.dump("fairness-"+fairTrickle, f.ttr)
	drained := bo.lastRecv
	if bo.received > 0 {
		r.Throughput = perSecond(float64(bo.received), drained.Sub(f.due))
	}
	during := f.ttr.lateDuring(f.due, drained)
	r.Lateness = latenessOf(during)
	r.Early, r.Lost, r.Duplicates = bo.early+to.early, bo.lost+to.lost, bo.dups+to.dups
	all := latenessOf(to.lateMs)
	bl := latenessOf(bo.lateMs)
	r.Trickle = &TrickleResult{Rate: e.o.sizes.fairRate, Messages: f.produced, DuringDrain: len(during), Lateness: r.Lateness, LatenessAll: all}
	r.Notes = append(r.Notes,
		fmt.Sprintf("lateness is the trickle topic's (1 slot, %d msg/s), of its %d messages due while the burst drained (%s); all %d of its messages: p50 %.1f / p99 %.1f / max %.1f ms",
			e.o.sizes.fairRate, len(during), drained.Sub(f.due).Round(time.Millisecond), f.produced, all.P50, all.P99, all.Max),
		fmt.Sprintf("msg/s is the burst topic's (%d slots): %d messages due at one instant; its own lateness p50 %.1f / p99 %.1f / max %.1f ms", f.burst.Slots, f.btr.n, bl.P50, bl.P99, bl.Max))
	if !f.allBurst {
		r.Notes = append(r.Notes, fmt.Sprintf("only %d of the burst's %d arrived", bo.received, f.btr.n))
	}
	if !f.allTrickle {
		r.Notes = append(r.Notes, fmt.Sprintf("only %d of the trickle's %d arrived", to.received, f.produced))
	}
	r.Notes = append(r.Notes, f.d.failures()...)
	r.Notes = append(r.Notes, f.d.histogramsOf(fairBurst), f.d.histogramsOf(fairTrickle))
	fmt.Fprintf(os.Stderr, "   burst topic: %.0f msg/s; trickle during the drain (%d): p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		r.Throughput, len(during), r.Lateness.P50, r.Lateness.P99, r.Lateness.Max)
	if f.raw {
		r.Notes = append(r.Notes, "the trickle was published by the bench straight to RabbitMQ at its due times: no delaybridge in its path")
		r.checkAlways()
		return
	}
	f.targets()
}

// targets records issue #26's fairness targets.
func (f *fairRun) targets() {
	r := f.r
	r.target("trickle topic's lateness p99 while the burst drains", r.Lateness.P99, "<=", fairTrickleP99, "ms", fmt.Sprintf("p99.9 %.1f, max %.1f ms", r.Lateness.P999, r.Lateness.Max))
	ref := f.e.burstRun
	switch {
	case ref == nil || ref.Throughput == 0:
		r.Notes = append(r.Notes, "burst did not run in this run (-run): no reference throughput")
	case ref.Messages != r.Messages:
		r.Ceilings["burst_scenario"] = ref.Throughput
		r.Notes = append(r.Notes, fmt.Sprintf("the burst scenario of this run (%d messages, not %d) drained at %.0f msg/s: a different size, no target", ref.Messages, r.Messages, ref.Throughput))
	default:
		r.Ceiling = ref.Throughput
		r.Ceilings["burst_scenario"] = ref.Throughput
		r.Ratio = ratio(r.Throughput, r.Ceiling)
		r.target("burst topic's throughput / the burst scenario's in this run", r.Ratio, ">=", fairBurstShare, "", fmt.Sprintf("%.0f vs %.0f msg/s", r.Throughput, ref.Throughput))
	}
	r.checkAlways()
}

// TrickleResult is the fairness scenario's trickle topic: its rate, the
// messages written, how many fell due while the burst drained and their
// lateness (ms), and the lateness of all of them.
type TrickleResult struct {
	Rate        int      `json:"rate"`
	Messages    int      `json:"messages"`
	DuringDrain int      `json:"during_drain"`
	Lateness    Lateness `json:"lateness_ms"`
	LatenessAll Lateness `json:"lateness_all_ms"`
}

// truncate keeps the first k messages, once the consumer has ended: those
// written of a tracker sized for more.
func (t *tracker) truncate(k int) {
	k = min(k, t.n)
	t.n, t.recv, t.due = k, t.recv[:k], t.due[:k]
}

// lateDuring is the lateness (ms) of the received messages due from from to
// to, once the consumer has ended.
func (t *tracker) lateDuring(from, to time.Time) []float64 {
	var ms []float64
	lo, hi := from.UnixMilli(), to.UnixMilli()
	for i, at := range t.recv {
		if at != 0 && t.due[i] >= lo && t.due[i] <= hi {
			ms = append(ms, float64(at-t.due[i]*int64(time.Millisecond))/1e6)
		}
	}
	return ms
}
