// Package forwarder moves due messages from Redis to the sinks: one scanner
// per owned topic×slot claims batches, publishes them, and acks the confirmed
// ones, retries or dead-letters the failed ones; a reaper returns expired
// leases; ownership shares a topic's slots among the live replicas that
// forward it.
//
// It guarantees that a claimed message is either confirmed and acked, put
// back for another attempt, dead-lettered with a reason, or left in flight
// for the reaper (when Redis is unreachable or the process dies): never
// forgotten. On shutdown it stops claiming, lets in-flight batches finish
// within the shutdown timeout and returns the rest.
//
// A scanner is a pipeline with a file per stage, in the order a batch takes
// them: scanner.go (the scanner and its lifecycle), claim.go (claim a batch,
// nap until the next is due, wait for the sink), budget.go (flow control's
// answer to how many a claim may take, and what it did not use taken back;
// pace.go sizes a fair topic's claims by the slot's drain rate),
// ahead.go (messages claimed ahead wait until due), publish.go (prepare the
// messages, start the publish), settle.go (await the broker's answer,
// classify it once, write it to Redis) and recur.go (a recurrence's tick
// writes its next tick as it settles); beside them inflight.go (the cap on
// claimed messages and the slot-order rules after a lost connection),
// lease.go (renewing the leases of slow batches) and release.go (the Redis
// writes every stage shares: redisRetry, and release for members that go
// back without an attempt). slotstore.go names what the stages do to the
// slot's keys (the slot scripts in Redis, a fake in unit tests), clock.go
// the scanner's local time (the wall clock, a fake in unit tests).
//
// Around the scanners, each background loop is a small service of its own
// (loops.go: run, runOnce, a constructor with its config): reaper.go
// (expired leases), backlog.go (the backlog gauges), stranded.go (slots
// beyond a topic's slot count, left by a resize, join the owned slots until
// drained), heldstate.go (which topics flow control holds, for stats and
// the console), envreport.go (the limits each replica's environment gives),
// limits.go (the run-time limits), wake.go (the queue's wake-ups ring the
// scanners' alarms) and keyspace.go (Redis keyspace notifications: idle
// slots sleep until an event instead of polling) and ownership.go (the
// heartbeat, and the slots this replica owns among the live ones that
// forward its topics);
// unforwarded.go (due messages of topics no live replica forwards) and
// pausedgauge.go (the paused gauge follows pause within a second) are loops
// of the Forwarder's own. redisdown.go keeps a Redis outage to a few lines.
// forwarder.go builds them, runs them (ownership apart: Run runs it until
// ctx ends, then drains) and starts and stops the scanners of the owned
// slots; flow.go is a topic's flow control on this replica, options.go the
// options and their defaults, metrics.go the metrics, trace.go the publish
// spans (OpenTelemetry; none when tracing is off).
package forwarder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/internal/backoff"
	"github.com/delaybridge/delaybridge/internal/logrepeat"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// Topic is one topic with its sink.
type Topic struct {
	queue.Topic
	Sink sinks.Sink
}

// Forwarder runs the scanners, the reaper and ownership of one replica.
type Forwarder struct {
	opt Options
	q   *queue.Queue
	// slots is what the scanners claim from and settle to: q, or a
	// test's fake (slotstore.go).
	slots slotStore
	// clock is the scanners' local time (clock.go): wallClock, or a
	// test's fake.
	clock clock
	m     *Metrics
	log   *slog.Logger
	wakes *wakeups
	// flowState is the topics' flow control in Redis, over q (flow.go).
	flowState *flowstate.Store
	// ks is the keyspace notification mode in force (keyspace.go).
	ks keyspaceState
	// reaps is when each owned slot is reaped next (reaper.go).
	reaps *reapSchedule
	// stats caches the owned slots' backlog numbers (backlog.go).
	stats *statsCache
	// topicIndex maps a topic's name to its index in Options.Topics.
	topicIndex map[string]int
	// flows are the topics' flow control, by index in Options.Topics.
	flows []*flowTopic
	// retry is the wait before a refused message's next attempt:
	// Delay(n-1) after n failed attempts.
	retry backoff.Policy
	// repeats logs the failures that repeat, per topic and interval.
	repeats *logrepeat.Log
	// health is whether Redis answers, for the outage's lines (redisdown.go).
	health *redisHealth
	// pausedWake carries the topics whose pause changed (keyspace events)
	// to pausedLoop.
	pausedWake chan int

	// The background services (loops.go), each in its file.
	reaper      *reaper
	backlog     *backlogGauges
	search      *strandedSearch
	heldReports *heldReporter
	envReports  *envReporter
	limits      *limitsReader
	wake        *wakeListener
	keyspace    *keyspaceWatcher
	ownership   *ownership

	mu    sync.Mutex
	owned map[slotKey]*running
	// draining holds, per slot, when its last stopped scanner has drained:
	// a scanner started for the slot meanwhile waits for it (setOwnedAsync).
	draining map[slotKey]chan struct{}
	scanners sync.WaitGroup // every started scanner, until it drained

	// assignMu guards fw and stranded, and orders the changes of the
	// owned set that ownership and the stranded search make (reassign).
	assignMu sync.Mutex
	fw       *membership.Forwarding // who forwards what among the live replicas; nil while unknown or the heartbeat is lost
	stranded map[slotKey]bool       // slots beyond their topic's slot count that hold messages
}

// slotKey names one topic×slot.
type slotKey struct {
	topic int // index into Options.Topics
	slot  int
}

// running is a started scanner.
type running struct {
	cancel context.CancelFunc
	alarm  *alarm
	done   chan struct{} // closed once the scanner has drained
}

// New checks the options and returns a Forwarder ready to Run.
func New(opt Options) (*Forwarder, error) {
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	m := opt.Metrics
	if m == nil {
		return nil, errors.New("forwarder: no metrics")
	}
	index := map[string]int{}
	for i, t := range opt.Topics {
		m.initTopic(t.Name)
		index[t.Name] = i
	}
	f := &Forwarder{
		opt:        opt,
		q:          opt.Queue,
		slots:      opt.Queue,
		clock:      wallClock{},
		flowState:  flowstate.New(opt.Queue),
		m:          m,
		log:        opt.Log,
		wakes:      newWakeups(),
		reaps:      newReapSchedule(),
		stats:      newStatsCache(),
		topicIndex: index,
		retry:      retryPolicy(opt),
		repeats:    logrepeat.New(opt.Log, opt.logEvery),
		owned:      map[slotKey]*running{},
		draining:   map[slotKey]chan struct{}{},
	}
	f.health = newRedisHealth(f.repeats, f.log, opt.redisDownAfter)
	f.health.hint = opt.RedisHint
	f.pausedWake = make(chan int, len(opt.Topics))
	for _, t := range opt.Topics {
		f.flows = append(f.flows, newFlowTopic(f, t))
	}
	if err := f.buildServices(); err != nil {
		return nil, fmt.Errorf("forwarder: %w", err)
	}
	return f, nil
}

// shared is what the scanners and the loops share about the owned slots
// (loops.go).
func (f *Forwarder) shared() slotShared {
	return slotShared{wakes: f.wakes, reaps: f.reaps, stats: f.stats, ks: &f.ks}
}

// buildServices builds the background services from the options, each
// with what it uses.
func (f *Forwarder) buildServices() error {
	opt := &f.opt
	var errs [9]error
	f.reaper, errs[0] = newReaper(reaperConfig{Topics: opt.Topics, Lease: opt.Lease, Health: f.health}, f.q, f.m, f.log, f.shared())
	f.backlog, errs[1] = newBacklogGauges(backlogConfig{Topics: opt.Topics, Every: opt.BacklogInterval, Owned: f.ownedSlots},
		f.q, f.m, f.shared())
	f.search, errs[2] = newStrandedSearch(strandedConfig{Topics: opt.Topics, Every: opt.StrandedInterval, HandOff: f.setStranded},
		f.q, f.m, f.log)
	f.heldReports, errs[3] = newHeldReporter(heldReporterConfig{Replica: opt.ReplicaID, Flows: f.flows}, f.flowState, f.m, f.log)
	f.envReports, errs[4] = newEnvReporter(envReporterConfig{Replica: opt.ReplicaID, TTL: opt.HeartbeatTTL, Topics: opt.Topics, Flow: opt.Flow},
		f.flowState, f.m, f.log)
	f.limits, errs[5] = newLimitsReader(limitsConfig{Topics: opt.Topics, Flows: f.flows}, f.flowState, f.m, f.log)
	if f.limits != nil {
		f.limits.health = f.health
	}
	f.wake, errs[6] = newWakeListener(f.q, opt.KeyPrefix, f.topicIndex, f.shared())
	f.keyspace, errs[7] = newKeyspaceWatcher(keyspaceConfig{Topics: opt.Topics, KeyPrefix: opt.KeyPrefix, Events: opt.KeyspaceEvents,
		Recheck: opt.keyspaceRecheck, Lease: opt.Lease, PollInterval: opt.PollInterval, SafetyPoll: opt.KeyspacePollInterval,
		PausedChanged: f.pausedChanged},
		f.q, f.m, f.log, f.shared())
	f.ownership, errs[8] = newOwnership(ownershipConfig{Replica: opt.ReplicaID, KeyPrefix: opt.KeyPrefix,
		Every: opt.HeartbeatInterval, TTL: opt.HeartbeatTTL, SetLive: f.setLive,
		Scanning: func() bool { return len(f.ownedSlots()) > 0 }, Topics: f.topicNames(), Health: f.health},
		opt.HeartbeatQueue, f.m, f.log)
	return errors.Join(errs[:]...)
}

// Run forwards until ctx ends, then shuts down: scanners stop claiming,
// in-flight batches get ShutdownTimeout to finish and the rest is returned.
// It returns nil after a clean shutdown.
func (f *Forwarder) Run(ctx context.Context) error {
	var loops services
	bg, stopBG := context.WithCancel(ctx)
	defer stopBG()
	loops.start(bg, f.wake, f.keyspace, f.reaper, f.backlog, f.search,
		serviceFunc(f.repeats.Run), f.limits, f.heldReports, f.envReports,
		serviceFunc(f.unforwardedLoop), serviceFunc(f.pausedLoop))
	if f.opt.AllSlots {
		f.reassign(ctx)
		<-ctx.Done()
	} else {
		f.ownership.run(ctx)
	}
	if !f.opt.AllSlots {
		f.ownership.leave() // the others take the slots over while we drain
	}
	f.assignMu.Lock()
	f.setOwnedAsync(ctx, nil)
	f.assignMu.Unlock()
	f.scanners.Wait() // each drains within ShutdownTimeout
	stopBG()
	loops.wait()
	f.repeats.Flush(time.Now(), true) // what the drain added
	return nil
}

// setOwnedAsync starts scanners for newly owned slots and stops those no
// longer owned without waiting for them to drain (Run waits at the end).
//
// A slot owned again while its stopped scanner still drains (the heartbeat
// was lost for a TTL and came back, with the broker slow to confirm) gets a
// scanner that claims nothing until the old one has drained: the slot's
// claimed messages stay within MaxInflightBatches×BatchSize, and its order
// within one claimer at a time.
func (f *Forwarder) setOwnedAsync(ctx context.Context, want map[slotKey]bool) {
	f.mu.Lock()
	for k, r := range f.owned {
		if !want[k] {
			r.cancel()
			delete(f.owned, k)
			f.draining[k] = r.done
			f.wakes.remove(k)
			f.reaps.drop(k)
		}
	}
	for k := range want {
		if _, ok := f.owned[k]; ok || ctx.Err() != nil {
			continue
		}
		sctx, cancel := context.WithCancel(ctx)
		r := &running{cancel: cancel, alarm: newAlarm(), done: make(chan struct{})}
		prev := f.draining[k]
		delete(f.draining, k) // r.done closes after prev from now on
		f.owned[k] = r
		f.wakes.add(k, r.alarm)
		f.reaps.acquire(k)
		f.stats.poke()
		s := f.newScanner(k, r.alarm)
		f.scanners.Add(1)
		go func() {
			defer f.scanners.Done()
			defer f.drained(k, r.done)
			if prev != nil {
				<-prev // within the shutdown timeout
			}
			if sctx.Err() == nil {
				s.run(sctx)
			}
		}()
	}
	counts := make([]int, len(f.opt.Topics))
	for k := range f.owned {
		counts[k.topic]++
	}
	f.mu.Unlock()
	for i, t := range f.opt.Topics {
		f.m.Owned.WithLabelValues(t.Name).Set(float64(counts[i]))
	}
}

// drained closes done, a scanner's, and forgets it if it is still the
// slot's draining one.
func (f *Forwarder) drained(k slotKey, done chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(done)
	if f.draining[k] == done {
		delete(f.draining, k)
	}
}

// retryPolicy is the documented schedule of a refused message's retries:
// RetryBackoff, doubled per failed attempt up to RetryBackoffMax. It has no
// jitter: it is the due time the retry is scheduled at in Redis, and the
// messages of a failed batch are claimed and published as a batch again.
func retryPolicy(opt Options) backoff.Policy {
	return backoff.Policy{Min: opt.RetryBackoff, Max: opt.RetryBackoffMax}
}

// ownedSlots is a snapshot of the slots scanned now.
func (f *Forwarder) ownedSlots() []slotKey {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]slotKey, 0, len(f.owned))
	for k := range f.owned {
		out = append(out, k)
	}
	return out
}
