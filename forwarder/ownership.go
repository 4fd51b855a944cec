package forwarder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/delaybridge/delaybridge/internal/logrepeat"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// ownership heartbeats this replica, reports the topics it forwards, reads
// those the other live replicas report, and scans the slots
// membership.Forwarding.Assign gives it among the live replicas that forward
// each of its topics (setLive). A replica that cannot renew its
// heartbeat for a whole TTL stops claiming: the others will have taken its
// slots over by then. Run runs it (it is not in the services' group: it
// decides when the replica stops scanning), unless AllSlots.
type ownership struct {
	member  *membership.Member
	m       *Metrics
	log     *slog.Logger
	replica string
	prefix  string
	topics  []string
	health  *redisHealth
	every   time.Duration
	ttl     time.Duration
	// setLive applies who forwards what among the live replicas (nil:
	// unknown, own nothing); scanning reports whether any slot is scanned
	// now.
	setLive  func(ctx context.Context, fw *membership.Forwarding) (gained, lost, owned int)
	scanning func() bool

	// run's own: when the last heartbeat that succeeded was sent, whether
	// a Forwarding is applied, and the forwarders of each of topics it had
	// (all that the slots this replica owns depend on).
	lastOK  time.Time
	applied bool
	last    [][]string
	lostKey [][]string // last when a lost heartbeat stopped the scanners
	passed  passes     // tests: signalled after each heartbeat applied
}

// ownershipConfig configures ownership.
type ownershipConfig struct {
	Replica, KeyPrefix string
	// Every and TTL are the heartbeat's interval and time to live
	// (default: Defaults()'s); TTL must exceed Every.
	Every, TTL time.Duration
	SetLive    func(ctx context.Context, fw *membership.Forwarding) (gained, lost, owned int)
	Scanning   func() bool
	// Topics are the topics this replica forwards, reported with each
	// heartbeat (queue.ReportServed).
	Topics []string
	// Health logs a failed heartbeat as one of Redis's repeating failures.
	Health *redisHealth
}

func newOwnership(cfg ownershipConfig, q *queue.Queue, m *Metrics, log *slog.Logger) (*ownership, error) {
	d := Defaults()
	every, ttl := cmp.Or(cfg.Every, d.HeartbeatInterval), cmp.Or(cfg.TTL, d.HeartbeatTTL)
	switch {
	case cfg.Replica == "" || cfg.KeyPrefix == "":
		return nil, errors.New("ownership: no replica id or key prefix")
	case every <= 0 || ttl <= 0:
		return nil, fmt.Errorf("ownership: heartbeat interval %s, ttl %s: want positive durations", every, ttl)
	case cfg.SetLive == nil || cfg.Scanning == nil:
		return nil, errors.New("ownership: no slots to apply the live replicas to")
	}
	if cfg.Health == nil {
		cfg.Health = newRedisHealth(logrepeat.New(log, 0), log, 0)
	}
	member := membership.New(q).Member(cfg.KeyPrefix, cfg.Replica, cfg.Topics, ttl)
	return &ownership{member: member, m: m, log: log, replica: cfg.Replica, prefix: cfg.KeyPrefix, every: every, ttl: ttl,
		setLive: cfg.SetLive, scanning: cfg.Scanning, topics: cfg.Topics, health: cfg.Health}, nil
}

// run heartbeats and applies the live replicas until ctx ends.
func (o *ownership) run(ctx context.Context) {
	beats := make(chan beat, 1)
	pending := false // a heartbeat is still waiting for Redis
	defer func() {
		if pending {
			<-beats
		}
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	o.lastOK = time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if !pending {
			pending = true
			go o.beat(ctx, beats)
		}
		// A heartbeat slower than the TTL is as good as lost. go-redis
		// ignores context deadlines unless ContextTimeoutEnabled, so a
		// stalled connection holds the call for its read timeout and
		// retries: it then goes on in the background and its answer, when
		// it comes, is used at the next beat.
		var b beat
		select {
		case b = <-beats:
			pending = false
		case <-time.After(o.ttl):
			b.err = fmt.Errorf("heartbeat: no answer from Redis within %s", o.ttl)
		case <-ctx.Done():
			return
		}
		if ctx.Err() != nil {
			return
		}
		timer.Reset(o.apply(ctx, b))
	}
}

// runOnce heartbeats once, waiting for Redis, applies the outcome and
// returns when the next heartbeat is due, with the heartbeat's failure.
func (o *ownership) runOnce(ctx context.Context) pass {
	out := make(chan beat, 1)
	o.beat(ctx, out)
	b := <-out
	wait := o.apply(ctx, b)
	return pass{err: b.err, next: time.Now().Add(wait)}
}

// apply acts on one heartbeat's outcome: a failure for a whole TTL stops
// every scanner; a change in which live replicas forward one of this
// replica's topics (one joins or leaves, or its report appears or changes)
// reassigns the slots. It returns the wait before the next heartbeat.
func (o *ownership) apply(ctx context.Context, b beat) time.Duration {
	defer o.passed.signal()
	if b.err != nil {
		o.m.RedisErrs.WithLabelValues("heartbeat").Inc()
		if time.Since(o.lastOK) >= o.ttl && o.scanning() {
			o.log.Error("heartbeat lost for a whole TTL; stopping every scanner until a heartbeat succeeds", "err", b.err)
			o.setLive(ctx, nil)
			o.lostKey = o.last
			o.applied, o.last = false, nil
		} else {
			o.health.failed("", "heartbeat failed", b.err)
		}
		return o.every
	}
	o.lastOK = b.sent
	o.health.ok(b.sent)
	o.m.Replicas.Set(float64(len(b.set.Live)))
	if key := o.forwarders(b.fw); !o.applied || !slices.EqualFunc(key, o.last, slices.Equal) {
		gained, lost, owned := o.setLive(ctx, &b.fw)
		level := slog.LevelInfo
		if o.lostKey != nil && slices.EqualFunc(key, o.lostKey, slices.Equal) {
			// The slots held before a lost heartbeat, back: "redis
			// reachable again" said it; an outage is its few lines.
			level = slog.LevelDebug
		}
		o.log.Log(ctx, level, "ownership changed", "replicas", len(b.set.Live), "owned", owned, "gained", gained, "lost", lost)
		o.applied, o.last, o.lostKey = true, key, nil
	}
	return nextBeat(b.set, o.replica, o.every)
}

// forwarders are the live replicas that forward each of this replica's
// topics, in the order of topics: the slots it owns follow from them alone.
func (o *ownership) forwarders(fw membership.Forwarding) [][]string {
	out := make([][]string, len(o.topics))
	for i, t := range o.topics {
		out[i] = fw.Forwarders(t)
	}
	return out
}

// beat is the outcome of one heartbeat.
type beat struct {
	set  membership.ReplicaSet
	fw   membership.Forwarding // who forwards what among set.Live
	err  error
	sent time.Time
}

// beat renews this replica's heartbeat and sends the outcome on out.
func (o *ownership) beat(ctx context.Context, out chan<- beat) {
	b := beat{sent: time.Now()}
	hctx, cancel := context.WithTimeout(ctx, o.ttl)
	defer cancel()
	var v membership.View
	v, b.err = o.member.Beat(hctx, b.sent)
	b.set, b.fw = v.Set, v.Forwarding
	o.m.RedisErrs.WithLabelValues("heartbeat").Add(float64(len(v.Failed)))
	out <- b
}

// nextBeat is the wait before the next heartbeat: the interval, or less when
// another replica's heartbeat expires sooner, so that a dead replica's slots
// are taken over one TTL after its last heartbeat rather than up to an
// interval later.
func nextBeat(set membership.ReplicaSet, self string, interval time.Duration) time.Duration {
	next, ok := set.NextExpiry(self)
	if !ok {
		return interval
	}
	// Redis drops a replica once its deadline is reached (score <= now).
	until := next.Sub(set.Now) + time.Millisecond
	return max(min(until, interval), time.Millisecond)
}

// setLive records who forwards what among the live replicas (nil:
// unknown, own nothing) and applies the slots this replica owns among them.
func (f *Forwarder) setLive(ctx context.Context, fw *membership.Forwarding) (gained, lost, owned int) {
	f.assignMu.Lock()
	f.fw = fw
	f.assignMu.Unlock()
	return f.reassign(ctx)
}

// reassign computes the slots this replica owns now (wanted) and starts
// and stops scanners to match. Ownership calls it when the forwarders of
// its topics change, the stranded search when the stranded slots do.
func (f *Forwarder) reassign(ctx context.Context) (gained, lost, owned int) {
	f.assignMu.Lock()
	defer f.assignMu.Unlock()
	want := f.wanted()
	gained, lost = diff(f.ownedSlots(), want)
	f.setOwnedAsync(ctx, want)
	return gained, lost, len(want)
}

// wanted are the slots this replica owns: with AllSlots every slot, else
// its share among the live replicas that forward each topic (none while
// they are unknown); and the stranded slots (beyond a topic's slot count),
// each owned by its rendezvous owner among those replicas
// (Forwarding.Owner): they are few and come and go. Needs assignMu.
func (f *Forwarder) wanted() map[slotKey]bool {
	want := map[slotKey]bool{}
	switch {
	case f.opt.AllSlots:
		for ti, t := range f.opt.Topics {
			for s := range t.SlotCount() {
				want[slotKey{ti, s}] = true
			}
		}
	case f.fw == nil:
		return want
	default:
		want = f.assign(*f.fw)
	}
	for k := range f.stranded {
		if f.opt.AllSlots || (f.fw != nil && f.fw.Owner(f.opt.Topics[k.topic].Name, k.slot) == f.opt.ReplicaID) {
			want[k] = true
		}
	}
	return want
}

// assign returns the slots this replica owns among the live replicas that
// forward each topic (see membership.Forwarding.Assign).
func (f *Forwarder) assign(fw membership.Forwarding) map[slotKey]bool {
	want := map[slotKey]bool{}
	for ti, t := range f.opt.Topics {
		for s, owner := range fw.Assign(t.Name, t.SlotCount()) {
			if owner == f.opt.ReplicaID {
				want[slotKey{ti, s}] = true
			}
		}
	}
	return want
}

// diff counts the slots in want that are not owned yet, and the owned ones
// not in want.
func diff(owned []slotKey, want map[slotKey]bool) (gained, lost int) {
	have := make(map[slotKey]bool, len(owned))
	for _, k := range owned {
		have[k] = true
		if !want[k] {
			lost++
		}
	}
	for k := range want {
		if !have[k] {
			gained++
		}
	}
	return gained, lost
}

// leave removes this replica from the replica set so the others take its
// slots at once instead of after the TTL. Failing to (Redis unreachable at
// shutdown) is no reason for a failed exit: the heartbeat expires within the
// TTL and the others take the slots then.
func (o *ownership) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	if err := o.member.Leave(ctx); err != nil {
		o.log.Warn("could not leave the replica set; the others take its slots when its heartbeat expires",
			"ttl", o.ttl, "err", err)
	}
	if err := o.member.Unserve(ctx); err != nil {
		o.log.Debug("could not drop the report of the topics this replica forwards; it expires with its TTL", "err", err)
	}
}
