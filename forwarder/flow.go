package forwarder

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/sinks"
)

// Flow control, per topic: a rate limit shared by every replica through
// Redis (flowstate.Acquire), and a destination queue depth above which the
// topic holds. Both act before a claim (budget.go), so held messages stay in
// the scheduled set: never lost, never early, in order, and their lateness
// includes the wait. A topic without a limit costs nothing per batch: its
// scanners never call the limiter. Limits changed at run time (delaybridge
// limit, flowstate.SetLimits) are read by limitsReader (limits.go) every
// limitsInterval.

// Flow is a topic's flow control as configured; a run-time override
// (flowstate.Override) replaces either field until cleared.
type Flow struct {
	// RateLimit is the most deliveries per second summed over every
	// replica; 0 means none.
	RateLimit float64
	// HoldQueue names the queue whose depth HoldAbove bounds; the topic's
	// sink reads it (QueueDepth). "" means none.
	HoldQueue string
	// HoldAbove is the ready count above which the topic holds, when
	// HoldQueue is set.
	HoldAbove int
}

// depthInterval is how long one reading of the hold queue's depth serves a
// topic's scanners on this replica: at most 1/depthInterval passive
// declares per second per topic, and only while a scanner wants to claim.
const depthInterval = 200 * time.Millisecond

// Why a topic is held, as the held gauge and the held reports say.
const (
	heldRate  = flowstate.HeldRate
	heldQueue = flowstate.HeldQueue
)

// flowTopic is one topic's flow control on this replica.
type flowTopic struct {
	f    *Forwarder
	t    Topic
	env  Flow
	rate atomic.Uint64 // math.Float64bits of the rate in force; 0: none
	hold atomic.Int64  // the hold-above in force; negative: none

	// unsettled counts the topic's messages this replica claimed and has
	// not settled (the scanners' inflight counts, summed).
	unsettled atomic.Int64
	// heldRate and heldQueue count the scanners waiting for each limit;
	// heldSeen has heldSeenRate and heldSeenQueue set by every hold since
	// the last held report (heldstate.go) took them.
	heldRate, heldQueue atomic.Int32
	heldSeen            atomic.Uint32

	// changed is closed (and replaced) when the limits in force change, so
	// a slot waiting for permits or for room looks again at once: a rate
	// lowered or lifted by delaybridge limit must not leave a slot asleep
	// for the old limit's wait.
	changed atomic.Pointer[chan struct{}]

	mu      sync.Mutex
	reading depthReading
	// since counts the messages claimed on this replica since reading
	// began: they may not be in its depth yet.
	since int
}

// depthReading is one passive declare of the hold queue.
type depthReading struct {
	at        time.Time // when it was asked for; zero: never
	depth     int
	unsettled int64 // this replica's unsettled messages when it was asked for
	err       error
}

func newFlowTopic(f *Forwarder, t Topic) *flowTopic {
	ft := &flowTopic{f: f, t: t, env: f.opt.Flow[t.Name]}
	ch := make(chan struct{})
	ft.changed.Store(&ch)
	ft.hold.Store(-1)
	ft.apply(flowstate.Override{})
	return ft
}

// apply puts the limits in force: o's fields where set, else the
// environment's; it updates the gauges.
func (ft *flowTopic) apply(o flowstate.Override) {
	hold := -1
	if ft.env.HoldQueue != "" {
		hold = ft.env.HoldAbove
	}
	rate, hold := o.Effective(ft.env.RateLimit, hold)
	if ft.env.HoldQueue == "" {
		hold = -1 // nowhere to read a depth from
	}
	old := ft.rate.Swap(math.Float64bits(rate))
	oldHold := ft.hold.Swap(int64(hold))
	if old != math.Float64bits(rate) || oldHold != int64(hold) {
		next := make(chan struct{})
		close(*ft.changed.Swap(&next))
	}
	ft.f.m.RateLimit.WithLabelValues(ft.t.Name).Set(rate)
}

// limited reports whether the topic has any limit in force now.
func (ft *flowTopic) limited() bool { return ft.rateNow() > 0 || ft.hold.Load() >= 0 }

func (ft *flowTopic) rateNow() float64 { return math.Float64frombits(ft.rate.Load()) }

// changes is closed when the limits in force next change.
func (ft *flowTopic) changes() <-chan struct{} { return *ft.changed.Load() }

// depthNow returns a reading of the hold queue no older than depthInterval,
// asking the sink when the last one is older. Call with ft.mu locked: the
// topic's scanners on this replica share one reading.
func (ft *flowTopic) depthNow(ctx context.Context) depthReading {
	if !ft.reading.at.IsZero() && time.Since(ft.reading.at) < depthInterval {
		return ft.reading
	}
	d, ok := ft.t.Sink.(sinks.QueueDepther)
	r := depthReading{at: time.Now(), unsettled: ft.unsettled.Load()}
	if !ok {
		r.depth = 0
	} else {
		rctx, cancel := context.WithTimeout(ctx, redisTimeout)
		r.depth, r.err = d.QueueDepth(rctx)
		cancel()
	}
	if r.err != nil && (ft.reading.err == nil || ft.reading.at.IsZero()) {
		ft.f.log.Warn("reading the hold queue's depth failed; the topic holds until it can be read",
			"topic", ft.t.Name, "queue", ft.env.HoldQueue, "err", r.err)
	}
	ft.reading, ft.since = r, 0
	ft.f.m.HoldQueueDepth.WithLabelValues(ft.t.Name).Set(float64(r.depth))
	return r
}

// replicas is how many live replicas share topic's queue budget: those
// that forward it (at least 1).
func (f *Forwarder) replicas(topic string) int {
	if f.opt.AllSlots {
		return 1
	}
	f.assignMu.Lock()
	defer f.assignMu.Unlock()
	if f.fw == nil {
		return 1
	}
	return max(1, len(f.fw.Forwarders(topic)))
}

// holdRoom is how many messages a slot of the topic may claim now under
// the hold-above limit (0: held), at most want. A reading at or below the
// limit lets the replica claim its share of the room it leaves (the room
// divided among the live replicas that forward the topic), less what it
// has claimed or not settled since; when that is used up, one more batch,
// so the queue exceeds the limit by at most one batch per slot.
func (ft *flowTopic) holdRoom(ctx context.Context, want int) (int, depthReading) {
	hold := ft.hold.Load()
	if hold < 0 {
		return want, depthReading{}
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	r := ft.depthNow(ctx)
	if r.err != nil || int64(r.depth) > hold {
		return 0, r
	}
	share := (hold - int64(r.depth)) / int64(ft.f.replicas(ft.t.Name))
	left := share - r.unsettled - int64(ft.since)
	if left <= 0 && ft.since > 0 {
		return 0, r // the one batch beyond the room is out: wait for a reading
	}
	n := want
	if left > 0 {
		n = min(want, int(left))
	}
	ft.since += n
	return n, r
}

// unclaimed takes back what holdRoom granted and a claim did not take.
func (ft *flowTopic) unclaimed(n int) {
	if n <= 0 || ft.hold.Load() < 0 {
		return
	}
	ft.mu.Lock()
	ft.since = max(0, ft.since-n)
	ft.mu.Unlock()
}

// heldBy is the count of scanners held for reason.
func (ft *flowTopic) heldBy(reason string) *atomic.Int32 {
	if reason == heldRate {
		return &ft.heldRate
	}
	return &ft.heldQueue
}

// sawHeld notes that a scanner began to wait for reason, for the next held
// report: a topic held for moments between two reports still shows.
func (ft *flowTopic) sawHeld(reason string) {
	bit := heldSeenQueue
	if reason == heldRate {
		bit = heldSeenRate
	}
	ft.heldSeen.Or(bit)
}
