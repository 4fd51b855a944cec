package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/queue"
)

// fair-share (issue #50): one topic with fair share on (docs/flow-control.md,
// "Fair share"); one key's burst due at one instant, and shareKeys other
// keys trickling fairRate msg/s in all while it drains.
const (
	shareKeys     = 100
	shareBurstKey = "burst"
	shareP99      = 50  // the trickle's lateness p99 while the burst drains (ms)
	shareRatio    = 0.9 // the burst's drain rate / the same on a plain topic
	// shareTrickleRoute routes the trickle to a queue and consumer of its
	// own, as fairness's trickle topic has: one consumer reading both would
	// hold the trickle behind the burst's backlog in RabbitMQ's queue,
	// whatever the daemon does.
	shareTrickleRoute = "trickle"
)

// bindTrickle declares the queue <target>-trickle, bound to target's
// exchange with shareTrickleRoute.
func (e *env) bindTrickle(target rabbitTarget) (rabbitTarget, error) {
	name := target.name + "-trickle"
	ch, err := e.amqp.Channel()
	if err != nil {
		return rabbitTarget{}, fmt.Errorf("channel: %w", err)
	}
	defer ch.Close()
	if _, err := ch.QueueDeclare(name, true, false, false, false, amqp091.Table{"x-queue-type": "classic"}); err != nil {
		return rabbitTarget{}, fmt.Errorf("declare queue %s: %w", name, err)
	}
	if err := ch.QueueBind(name, shareTrickleRoute, target.name, false, nil); err != nil {
		return rabbitTarget{}, fmt.Errorf("bind queue %s: %w", name, err)
	}
	return rabbitTarget{name: name}, nil
}

// runFairShare runs the same burst and trickle, through one daemon each,
// on a plain envelope topic and then on a fair one, and measures Redis's
// used_memory per waiting message and per key of both (no daemon).
func runFairShare(ctx context.Context, e *env) (Scenario, error) {
	n := e.o.sizes.fairShare
	r := Scenario{Messages: n, Ceilings: map[string]float64{}}
	plain, err := e.shareRun(ctx, "fair-share-plain", false, nil)
	if err != nil {
		return r, err
	}
	fair, err := e.shareRun(ctx, "fair-share", true, &r)
	if err != nil {
		return r, err
	}
	r.Throughput, r.Ceiling = fair.rate, plain.rate
	r.Ceilings["plain_topic"] = plain.rate
	r.Ratio = ratio(fair.rate, plain.rate)
	r.Lateness = latenessOf(fair.during)
	r.Early, r.Lost, r.Duplicates = fair.early, fair.lost, fair.dups
	pl := latenessOf(plain.during)
	r.Trickle = &TrickleResult{Rate: e.o.sizes.fairRate, Messages: fair.produced, DuringDrain: len(fair.during), Lateness: r.Lateness, LatenessAll: latenessOf(fair.all)}
	r.Notes = append(r.Notes,
		fmt.Sprintf("%d slots, envelopes; burst: %d messages of one key due at one instant; trickle: %d keys, %d msg/s in all, each written %s ahead", e.o.sizes.burstSlots, n, shareKeys, e.o.sizes.fairRate, trickleLead),
		fmt.Sprintf("fair topic: burst drained at %.0f msg/s; trickle due during the drain (%d): p50 %.1f / p99 %.1f / max %.1f ms", fair.rate, len(fair.during), r.Lateness.P50, r.Lateness.P99, r.Lateness.Max),
		fmt.Sprintf("plain topic, same run: burst drained at %.0f msg/s; trickle due during the drain (%d): p50 %.1f / p99 %.1f / max %.1f ms", plain.rate, len(plain.during), pl.P50, pl.P99, pl.Max))
	r.Notes = append(r.Notes, fair.notes...)
	r.Notes = append(r.Notes, plain.notes...)
	r.target("fair topic: the trickle's lateness p99 while one key's burst drains", r.Lateness.P99, "<=", shareP99, "ms", fmt.Sprintf("plain topic %.1f ms", pl.P99))
	r.target("fair topic: the burst's drain rate / a plain topic's in this run", r.Ratio, ">=", shareRatio, "", fmt.Sprintf("%.0f vs %.0f msg/s", fair.rate, plain.rate))
	if err := e.shareMemory(ctx, &r, n); err != nil {
		return r, err
	}
	fmt.Fprintf(os.Stderr, "   fair: burst %.0f msg/s (plain %.0f, %.2f×); trickle p99 %.1f ms (plain %.1f ms)\n", fair.rate, plain.rate, r.Ratio, r.Lateness.P99, pl.P99)
	r.checkAlways()
	return r, nil
}

// shareResult is one run of fair-share's burst and trickle.
type shareResult struct {
	rate              float64   // the burst's messages/s, due time to last receipt
	during, all       []float64 // the trickle's lateness (ms): due while the burst drained, all
	produced          int       // trickle messages written
	early, lost, dups int
	notes             []string
}

// shareRun schedules the burst (seq 0…n-1, key shareBurstKey) and the
// trickle (seq n…, keys t000…) on a topic of its own, fair or not, served by
// a daemon of its own, and waits until both arrived. With r, the daemon's
// costs during the drain go to r.
func (e *env) shareRun(ctx context.Context, name string, fair bool, r *Scenario) (shareResult, error) {
	s := e.o.sizes
	n, slots := s.fairShare, s.burstSlots
	var res shareResult
	prefix, target, drop, err := e.space(name)
	if err != nil {
		return res, err
	}
	defer drop()
	t := queue.Topic{Name: "bench", Prefix: prefix, Slots: slots, Format: queue.FormatEnvelope, Fair: fair}
	vars := map[string]string{"DELAYBRIDGE_KEY_PREFIX": prefix, "DELAYBRIDGE_TOPICS": t.Name,
		"DELAYBRIDGE_TOPIC_BENCH_FORMAT": "envelope", "DELAYBRIDGE_TOPIC_BENCH_FAIR": strconv.FormatBool(fair)}
	topicVars(vars, t, target)
	d, err := startDaemonTopics(ctx, e, vars, map[string]int{t.Name: slots})
	if err != nil {
		return res, err
	}
	defer d.finish(e.o.keepLogs)
	btr, ttr := newTracker(n), newTracker(s.fairRate*int(trickleMax/time.Second))
	stop, err := e.shareConsume(target, n, btr, ttr)
	if err != nil {
		return res, err
	}
	defer stop()
	dr, err := e.shareDrive(ctx, t, d, btr, ttr, r)
	if err != nil {
		return res, err
	}
	res.produced = dr.produced
	stop()
	bo := btr.outcome()
	ttr.truncate(res.produced)
	to := ttr.outcome()
	e.dump(name+"-burst", btr)
	e.dump(name+"-trickle", ttr)
	if bo.received > 0 {
		res.rate = perSecond(float64(bo.received), bo.lastRecv.Sub(dr.due))
	}
	res.during, res.all = ttr.lateDuring(dr.due, bo.lastRecv), to.lateMs
	res.early, res.lost, res.dups = bo.early+to.early, bo.lost+to.lost, bo.dups+to.dups
	if !dr.allBurst {
		res.notes = append(res.notes, fmt.Sprintf("%s: only %d of the burst's %d arrived", name, bo.received, n))
	}
	if !dr.allTrickle {
		res.notes = append(res.notes, fmt.Sprintf("%s: only %d of the trickle's %d arrived", name, to.received, res.produced))
	}
	res.notes = append(res.notes, d.failures()...)
	res.notes = append(res.notes, name+": "+d.histogramsOf(t.Name))
	return res, ctx.Err()
}

// shareConsume starts the burst's consumer on target's queue and the
// trickle's on a queue of its own (bindTrickle), the trickle's seq less n;
// stop stops both and deletes the trickle's queue.
func (e *env) shareConsume(target rabbitTarget, n int, btr, ttr *tracker) (stop func(), err error) {
	trickleQ, err := e.bindTrickle(target)
	if err != nil {
		return nil, err
	}
	stopBurst, err := e.consume(target, btr)
	if err != nil {
		e.undeclare(trickleQ)
		return nil, err
	}
	stopTrickle, err := e.consumeWith(trickleQ, func(dl amqp091.Delivery, at int64) {
		if seq, due, ok := parseBody(dl.Body); ok {
			ttr.record(seq-n, due, at)
		} else {
			ttr.bad.Add(1)
		}
	})
	if err != nil {
		stopBurst()
		e.undeclare(trickleQ)
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			stopBurst()
			stopTrickle()
			e.undeclare(trickleQ)
		})
	}, nil
}

// shareDrain is what shareDrive saw: the burst's due time, the trickle
// messages written, and whether all of each arrived.
type shareDrain struct {
	due                  time.Time
	produced             int
	allBurst, allTrickle bool
}

// shareDrive writes the burst, starts the trickle from half trickleLead
// before the burst's due time, and waits until the burst drained and every
// trickle message written arrived. With r, the daemon's costs during the
// drain go to r.
func (e *env) shareDrive(ctx context.Context, t queue.Topic, d *daemon, btr, ttr *tracker, r *Scenario) (shareDrain, error) {
	var dr shareDrain
	rate := e.o.sizes.fairRate
	// The burst is written through the producer API (the fair index is
	// written with it), so its lead is longer than burst's.
	dr.due = time.Now().Add(3*time.Second + time.Duration(btr.n)*100*time.Microsecond).Truncate(time.Millisecond)
	t0 := dr.due.Add(-trickleLead / 2)
	dueOf := func(i int) time.Time {
		return t0.Add(time.Duration(i) * time.Second / time.Duration(rate)).Truncate(time.Millisecond)
	}
	if err := e.shareSchedule(ctx, t, 0, btr.n, true, func(int) string { return shareBurstKey }, func(int) time.Time { return dr.due }); err != nil {
		return dr, err
	}
	if left := time.Until(dr.due); left < trickleLead {
		return dr, fmt.Errorf("scheduling took too long: %s left before the due time", left)
	}
	pctx, stopProducing := context.WithCancel(ctx)
	defer stopProducing()
	produced := make(chan error, 1)
	go func() { produced <- e.shareTrickle(pctx, t, btr.n, ttr.n, &dr.produced, dueOf) }()
	time.Sleep(time.Until(dr.due) - 100*time.Millisecond)
	var w *window
	if r != nil {
		w = e.startWindow(ctx, d)
	}
	dr.allBurst = btr.wait(dr.due.Add(5*time.Minute), 20*time.Second)
	time.Sleep(trickleTail)
	stopProducing()
	if err := <-produced; err != nil && !errors.Is(err, context.Canceled) {
		return dr, err
	}
	dr.allTrickle = ttr.waitFor(dr.produced, time.Now().Add(time.Minute), 10*time.Second)
	if w != nil {
		w.end(ctx, r)
	}
	return dr, ctx.Err()
}

// shareSchedule writes messages first…first+k-1 (body seq: the index) of
// key keyOf(i), due at dueOf(i), to t through queue.ScheduleBatch.
// With route, the trickle's messages (any key but shareBurstKey) carry
// the routing key shareTrickleRoute.
func (e *env) shareSchedule(ctx context.Context, t queue.Topic, first, k int, route bool, keyOf func(int) string, dueOf func(int) time.Time) error {
	const chunk = 5_000
	for i := first; i < first+k; i += chunk {
		items := make([]queue.Item, 0, chunk)
		for j := i; j < min(i+chunk, first+k); j++ {
			at := dueOf(j)
			b := body(j, at.UnixMilli(), e.o.size)
			m := queue.Message{Body: b, ID: queue.MessageID(b), Key: keyOf(j)}
			if m.Key != shareBurstKey && route {
				m.RoutingKey = shareTrickleRoute
			}
			items = append(items, queue.Item{Message: m, When: queue.At(at)})
		}
		if _, err := e.q.ScheduleBatch(ctx, t, items); err != nil {
			return fmt.Errorf("schedule %d in %s: %w", len(items), t.Name, err)
		}
	}
	return nil
}

// shareTrickle writes trickle message i (seq base+i, key t<i mod
// shareKeys>) of at most n, due at dueOf(i), trickleLead before it falls
// due, every 20 ms, until ctx ends; *written counts those written.
func (e *env) shareTrickle(ctx context.Context, t queue.Topic, base, n int, written *int, dueOf func(int) time.Time) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	next := 0
	for next < n {
		horizon := time.Now().Add(trickleLead)
		from := next
		for next < n && !dueOf(next).After(horizon) {
			next++
		}
		if next > from {
			// Not ctx: a write cut short would leave messages counted
			// as written that Redis never got.
			err := e.shareSchedule(context.WithoutCancel(ctx), t, base+from, next-from, true,
				func(j int) string { return fmt.Sprintf("t%03d", (j-base)%shareKeys) },
				func(j int) time.Time { return dueOf(j - base) })
			if err != nil {
				return err
			}
			*written = next
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// shareMemory records Redis's used_memory per waiting message of one key,
// fair and plain, and per key of a fair topic: k messages of k keys less k
// messages of one key, over k (no daemon; due in an hour).
func (e *env) shareMemory(ctx context.Context, r *Scenario, k int) error {
	one := func(int) string { return "one" }
	each := func(i int) string { return "k" + strconv.Itoa(i) }
	plain, err := e.shareBytes(ctx, "fair-share-mem-plain", false, k, one)
	if err != nil {
		return err
	}
	fair, err := e.shareBytes(ctx, "fair-share-mem-fair", true, k, one)
	if err != nil {
		return err
	}
	fairKeys, err := e.shareBytes(ctx, "fair-share-mem-keys", true, k, each)
	if err != nil {
		return err
	}
	plainKeys, err := e.shareBytes(ctx, "fair-share-mem-plainkeys", false, k, each)
	if err != nil {
		return err
	}
	perKey := (fairKeys - plainKeys) - (fair - plain)
	r.PerMessage = &Costs{Messages: k, RedisBytes: fair}
	r.Notes = append(r.Notes, fmt.Sprintf("Redis used_memory per waiting message (%d of one key, %d-byte bodies): fair %.0f bytes, plain %.0f (+%.0f); per key (%d keys of one message each, less one key's): +%.0f bytes on a fair topic", k, memoryBody, fair, plain, fair-plain, k, perKey))
	fmt.Fprintf(os.Stderr, "   used_memory per message: fair %.0f, plain %.0f bytes; per key +%.0f bytes\n", fair, plain, perKey)
	return nil
}

// shareBytes schedules k messages of memoryBody bytes, key keyOf(i), on a
// topic (fair or not) of its own and returns used_memory's delta per message.
func (e *env) shareBytes(ctx context.Context, name string, fair bool, k int, keyOf func(int) string) (float64, error) {
	prefix := e.prefix(name)
	defer e.dropKeys(prefix)
	t := queue.Topic{Name: "bench", Prefix: prefix, Slots: e.o.sizes.burstSlots, Format: queue.FormatEnvelope, Fair: fair}
	e.waitLazyFree(ctx)
	before, err := e.redisCounters(ctx)
	if err != nil {
		return 0, err
	}
	due := time.Now().Add(time.Hour)
	size := e.o.size
	e.o.size = memoryBody
	err = e.shareSchedule(ctx, t, 0, k, false, keyOf, func(i int) time.Time { return due.Add(time.Duration(i) * time.Millisecond) })
	e.o.size = size
	if err != nil {
		return 0, err
	}
	after, err := e.redisCounters(ctx)
	if err != nil {
		return 0, err
	}
	return math.Round(float64(after.mem-before.mem) / float64(k)), nil
}
