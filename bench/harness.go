package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
)

// harnessProducers is how many producers burst-harness writes with, each
// one ZADD per round trip (issue #32's second harness: 8).
const harnessProducers = 8

// harnessGap is how long after the last write burst-harness's messages
// fall due (the harness: about 2 s).
const harnessGap = 2 * time.Second

// runBurstHarness: the burst shaped like the independent harness of issue
// #32, where delaybridge reached half of RabbitMQ's raw rate on 16 cores:
// Redis with notify-keyspace-events "ghzK" (as README recommends), so the
// daemon wakes on keyspace notifications; 8 producers writing one ZADD per
// round trip while the daemon already runs (every write a notification to
// it); the burst falling due about 2 s after the last write. Compared with
// the raw publisher right before and after, as burst is.
func runBurstHarness(ctx context.Context, e *env) (Scenario, error) {
	n, slots := e.o.sizes.burst, e.o.sizes.burstSlots
	r := Scenario{Messages: n, Ceilings: map[string]float64{}}
	prefix, target, drop, err := e.space("burst-harness")
	if err != nil {
		return r, err
	}
	defer drop()
	restore, err := e.keyspaceEvents(ctx, "ghzK", &r)
	if err != nil {
		return r, err
	}
	defer restore()

	before, after, err := e.aroundRaw(ctx, &r, target, n, func() error {
		return e.harnessThroughDaemon(ctx, &r, prefix, target, slots, n)
	})
	if err != nil {
		return r, err
	}
	r.Ratio = ratio(r.Throughput, r.Ceiling)
	r.Notes = append(r.Notes, fmt.Sprintf("raw RabbitMQ %.0f msg/s before and %.0f after the daemon's run; against the higher one the ratio is %.2f", before, after, ratio(r.Throughput, max(before, after))))
	r.rabbitCosts(n)
	r.target("throughput / raw RabbitMQ ceiling", r.Ratio, ">=", 0.9, "", fmt.Sprintf("%.0f vs %.0f msg/s", r.Throughput, r.Ceiling))
	if b := e.burstRun; b != nil && b.Throughput > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("burst in the same run: %.0f msg/s (%.2f of its ceiling); this one %.2f of burst's throughput", b.Throughput, b.Ratio, ratio(r.Throughput, b.Throughput)))
	}
	r.checkAlways()
	return r, nil
}

// harnessThroughDaemon starts the daemon, then writes n messages with
// harnessProducers producers, one ZADD each, due harnessGap after the
// writes are expected to end, and measures their delivery.
func (e *env) harnessThroughDaemon(ctx context.Context, r *Scenario, prefix string, target rabbitTarget, slots, n int) error {
	d, err := startDaemon(ctx, e, amqpVars(prefix, target, slots), slots)
	if err != nil {
		return err
	}
	defer d.finish(e.o.keepLogs)
	r.Notes = append(r.Notes, d.keyspaceMode("auto"))
	tr := newTracker(n)
	stop, err := e.consume(target, tr)
	if err != nil {
		return err
	}
	defer stop()

	t := benchTopic(prefix, slots)
	// How fast the producers write on this machine now: a tenth of the
	// burst due in an hour, removed before the burst. Into the topic the
	// daemon serves, so that every write wakes it as the burst's will: into
	// a topic nobody served, the writes ran faster than the burst's on 16
	// cores (each of those wakes the daemon, whose claim then takes Redis
	// time), and the burst fell due before its last write.
	k := max(n/10, 1000)
	calDue := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	calStart := time.Now()
	if err := e.writeOneByOne(ctx, t, k, calDue); err != nil {
		return err
	}
	perWrite := time.Since(calStart) / time.Duration(k)
	for slot := range t.SlotCount() {
		score := strconv.FormatInt(calDue.UnixMilli(), 10)
		if err := e.rdb.ZRemRangeByScore(ctx, t.Keys(slot).Scheduled, score, score).Err(); err != nil {
			return fmt.Errorf("remove the calibration's writes: %w", err)
		}
	}
	start := time.Now()
	// A margin of half the calibrated time: the write rate of a shared
	// machine moves by a third from one second to the next.
	due := start.Add(harnessGap + perWrite*time.Duration(n)*3/2).Truncate(time.Millisecond)
	if err := e.writeOneByOne(ctx, t, n, due); err != nil {
		return err
	}
	written := time.Now()
	gap := due.Sub(written)
	r.Notes = append(r.Notes, fmt.Sprintf("%d producers wrote %d ZADDs in %s (%.0f/s); the burst fell due %s after the last", harnessProducers, n, written.Sub(start).Round(time.Millisecond), perSecond(float64(n), written.Sub(start)), gap.Round(time.Millisecond)))
	if gap <= 0 {
		return fmt.Errorf("writing took too long: the burst fell due %s before the last write", -gap)
	}
	return e.drainWindow(ctx, r, d, tr, stop, "burst-harness", due, due, 0)
}

// writeOneByOne writes n messages due at due into t's slots, one ZADD per
// round trip from each of harnessProducers goroutines.
func (e *env) writeOneByOne(ctx context.Context, t queue.Topic, n int, due time.Time) error {
	var wg sync.WaitGroup
	errs := make([]error, harnessProducers)
	for p := range harnessProducers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i < n; i += harnessProducers {
				m := body(i, due.UnixMilli(), e.o.size)
				key := t.Keys(queue.Slot(m, t.SlotCount())).Scheduled
				if err := e.rdb.ZAdd(ctx, key, redis.Z{Score: float64(due.UnixMilli()), Member: m}).Err(); err != nil {
					errs[p] = fmt.Errorf("producer %d: ZADD: %w", p, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
