package forwarder

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/delaybridge/delaybridge/internal/backoff"
	"github.com/delaybridge/delaybridge/internal/logrepeat"
	"github.com/delaybridge/delaybridge/sinks"
)

// redisTimeout bounds one Redis call made outside the scanner's own context
// (claims, acks, releases during shutdown): it must not hang forever, and a
// call cut short by shutdown would leave claimed messages to the reaper.
const redisTimeout = 5 * time.Second

// retryJitter shortens every wait of the scanners' retry loops (a failed
// claim or Redis write, a sink not connected) by up to a fifth at random,
// so the replicas of a fleet that failed together (Redis or the broker
// restarted) do not retry in lockstep.
const retryJitter = 0.2

// scanner claims and publishes the due messages of one topic×slot.
//
// Its pipeline: the claimer (run) claims batches in score order and starts
// publishing each in that order, and the settler waits for the broker's
// answers in that order and records them in Redis. A sink that can start a
// publish without waiting for its confirms (sinks.Starter) gets batch k+1
// while the broker still confirms batch k; any other sink is published to
// by a goroutine of its own between the two, so the claimer still claims
// ahead. The claimed messages not yet settled are capped (see inflight), so
// a slow broker slows claiming instead of moving the backlog into flight.
//
// One batch goes through the stages in this order, a file each: claimLoop
// (claim.go) asks the claim budget (budget.go) how many it may claim, claims them and
// gives the claim budget back what it did not use; handOver (ahead.go) keeps what
// was claimed ahead until due; publish (publish.go) hands it to the sink;
// settleLoop (settle.go) classifies the broker's answers once and records
// them in Redis, recurrences' ticks through recur.go. The claimer runs the
// first two stages itself: claimLoop calls ahead.go's handOver, part and
// lookAhead, and ahead.go uses claim.go's batch and aheadClaim. From the
// handover on a batch only moves forward: publish uses the claim's types,
// settle those of publish (delivery, outcomeOf), and neither calls back
// into an earlier stage. run, here, wires them. inflight.go and
// lease.go hold the state they share (how much is in flight, the leases to
// renew), release.go the two ways every stage writes: redisRetry, and
// release for members that go back without an attempt.
type scanner struct {
	cfg scannerConfig
	// store is the slot's keys (slotstore.go): Redis, or a test's fake.
	store slotStore
	// clock is the scanner's local time (clock.go): the wall clock, or a
	// test's fake.
	clock clock
	m     *Metrics
	// health logs Redis failures as one replica's repeating failures.
	health *redisHealth
	// topic is the slot's topic (Options.Topics[key.topic]); key names the
	// slot.
	topic Topic
	key   slotKey
	alarm *alarm
	in    *inflight
	// leases are the claimed batches whose leases keepLeases renews.
	leases *leases
	log    *slog.Logger
	// skew is Redis's clock minus the local clock at the last claim (the
	// claimer's own; nap converts Redis times with it).
	skew time.Duration
	// budget is how much the slot may claim: its room in flight and its topic's flow control (budget.go).
	budget *claimBudget
	// What the replica shares with the scanner: the keyspace mode in force
	// (the poll interval), the reaper's schedule (leases set), the slots'
	// alarms (a recurrence's next tick) and the repeating-failure log.
	ks      *keyspaceState
	reaps   *reapSchedule
	wakes   *wakeups
	repeats *logrepeat.Log
	// spans is what the slot's publish spans share (trace.go's kit).
	spans *spanKit
}

// scannerConfig is what a scanner uses of the Options.
type scannerConfig struct {
	Lease, ShutdownTimeout time.Duration
	// PollInterval and SafetyPoll are the longest an idle slot sleeps
	// without and with keyspace notifications.
	PollInterval, SafetyPoll time.Duration
	MaxAttempts              int
	// Retry is a refused message's retry schedule (retryPolicy).
	Retry backoff.Policy
	// Tracing emits the slot's publish spans (trace.go); zero: none.
	Tracing Tracing
}

func (f *Forwarder) newScanner(k slotKey, a *alarm) *scanner {
	t := f.opt.Topics[k.topic]
	log := f.log.With("topic", t.Name, "slot", k.slot)
	in := newInflight(&f.flows[k.topic].unsettled)
	opt, shared := &f.opt, f.shared()
	return &scanner{
		cfg: scannerConfig{Lease: opt.Lease, ShutdownTimeout: opt.ShutdownTimeout, PollInterval: opt.PollInterval,
			SafetyPoll: opt.KeyspacePollInterval, MaxAttempts: opt.MaxAttempts, Retry: f.retry, Tracing: opt.Tracing},
		store:  f.slots,
		clock:  f.clock,
		health: f.health,
		m:      f.m,
		topic:  t,
		key:    k,
		alarm:  a,
		in:     in,
		leases: newLeases(),
		log:    log,
		budget: &claimBudget{in: in, batch: opt.BatchSize, most: opt.MaxInflightBatches * opt.BatchSize,
			flow: f.flows[k.topic], fs: f.flowState, health: f.health, topic: t.Topic, m: f.m, log: log, pace: paceOf(t.Topic)},
		ks:      shared.ks,
		reaps:   shared.reaps,
		wakes:   shared.wakes,
		repeats: f.repeats,
	}
}

// pollInterval is the longest the slot sleeps idle in the keyspace mode in
// force (keyspaceState.pollInterval).
func (s *scanner) pollInterval() time.Duration {
	return s.ks.pollInterval(s.cfg.PollInterval, s.cfg.SafetyPoll)
}

// pipelineDepth is how many batches may wait between two stages of the
// pipeline; the inflight cap is what bounds the messages.
const pipelineDepth = 64

// run claims until ctx ends, then lets the batches already claimed finish
// within the shutdown timeout; what is not confirmed by then is returned.
func (s *scanner) run(ctx context.Context) {
	// In-flight batches outlive ctx by at most the shutdown timeout: a
	// timer armed when ctx ends, not a goroutine per slot waiting for it.
	drain, cancelDrain := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelDrain()
	stopWatch := context.AfterFunc(ctx, func() { time.AfterFunc(s.cfg.ShutdownTimeout, cancelDrain) })
	defer stopWatch()

	sent := make(chan *delivery, pipelineDepth)
	done := make(chan struct{})
	keepCtx, stopKeeping := context.WithCancel(drain)
	var keepers sync.WaitGroup
	s.leases.mu.Lock()
	s.leases.keeper = func() { keepers.Go(func() { s.keepLeases(keepCtx) }) }
	s.leases.mu.Unlock()
	defer func() { stopKeeping(); keepers.Wait() }()
	go func() {
		defer close(done)
		s.settleLoop(drain, sent)
	}()
	if _, ok := s.topic.Sink.(sinks.Starter); ok {
		// Starting a publish does not wait for the broker, so the claimer
		// starts its batches itself: one goroutine hop less per batch.
		s.claimLoop(ctx, func(b batch) { sent <- s.publish(drain, b) })
		close(sent)
	} else {
		work := make(chan batch, pipelineDepth)
		go func() {
			defer close(sent)
			for b := range work {
				sent <- s.publish(drain, b)
			}
		}()
		s.claimLoop(ctx, func(b batch) { work <- b })
		close(work)
	}
	<-done
}
