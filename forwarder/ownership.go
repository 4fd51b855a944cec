package forwarder

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// ownershipLoop heartbeats this replica and scans the slots queue.Assign gives it
// among the live replicas, until ctx ends. A replica that cannot renew its
// heartbeat for a whole TTL stops claiming: the others will have taken its
// slots over by then.
func (f *Forwarder) ownershipLoop(ctx context.Context) {
	beats := make(chan beat, 1)
	pending := false // a heartbeat is still waiting for Redis
	defer func() {
		if pending {
			<-beats
		}
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	lastOK := time.Now() // when the last heartbeat that succeeded was sent
	var last []string
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if !pending {
			pending = true
			go f.beat(ctx, beats)
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
		case <-time.After(f.opt.HeartbeatTTL):
			b.err = fmt.Errorf("heartbeat: no answer from Redis within %s", f.opt.HeartbeatTTL)
		case <-ctx.Done():
			return
		}
		if b.err != nil {
			if ctx.Err() != nil {
				return
			}
			f.m.RedisErrs.WithLabelValues("heartbeat").Inc()
			if time.Since(lastOK) >= f.opt.HeartbeatTTL && len(f.ownedSlots()) > 0 {
				f.log.Error("heartbeat lost for a whole TTL; stopping every scanner", "err", b.err)
				f.setLive(ctx, nil)
				last = nil
			} else {
				f.redisFailed("", "heartbeat failed", b.err)
			}
			timer.Reset(f.opt.HeartbeatInterval)
			continue
		}
		lastOK = b.sent
		f.redisOK()
		f.m.Replicas.Set(float64(len(b.set.Live)))
		if !slices.Equal(b.set.Live, last) {
			gained, lost, owned := f.setLive(ctx, b.set.Live)
			f.log.Info("ownership changed", "replicas", len(b.set.Live), "owned", owned, "gained", gained, "lost", lost)
			last = b.set.Live
		}
		timer.Reset(nextBeat(b.set, f.opt.ReplicaID, f.opt.HeartbeatInterval))
	}
}

// beat is the outcome of one heartbeat.
type beat struct {
	set  queue.ReplicaSet
	err  error
	sent time.Time
}

// beat renews this replica's heartbeat and sends the outcome on out.
func (f *Forwarder) beat(ctx context.Context, out chan<- beat) {
	b := beat{sent: time.Now()}
	hctx, cancel := context.WithTimeout(ctx, f.opt.HeartbeatTTL)
	defer cancel()
	b.set, b.err = f.q.Heartbeat(hctx, f.opt.KeyPrefix, f.opt.ReplicaID, f.opt.HeartbeatTTL)
	if b.err == nil {
		// Which topics this replica forwards (queue.Forwarding); a failure
		// is the next beat's to repair.
		if err := f.q.ReportServed(hctx, f.opt.KeyPrefix, f.opt.ReplicaID, f.topicNames(), b.set.Live, f.opt.HeartbeatTTL); err != nil {
			f.m.RedisErrs.WithLabelValues("heartbeat").Inc()
		}
	}
	out <- b
}

// nextBeat is the wait before the next heartbeat: the interval, or less when
// another replica's heartbeat expires sooner, so that a dead replica's slots
// are taken over one TTL after its last heartbeat rather than up to an
// interval later.
func nextBeat(set queue.ReplicaSet, self string, interval time.Duration) time.Duration {
	next, ok := set.NextExpiry(self)
	if !ok {
		return interval
	}
	// Redis drops a replica once its deadline is reached (score <= now).
	until := next.Sub(set.Now) + time.Millisecond
	return max(min(until, interval), time.Millisecond)
}

// setLive records the live replicas (nil: unknown, own nothing) and
// applies the slots this replica owns among them.
func (f *Forwarder) setLive(ctx context.Context, live []string) (gained, lost, owned int) {
	f.assignMu.Lock()
	f.live = live
	f.assignMu.Unlock()
	return f.reassign(ctx)
}

// reassign computes the slots this replica owns now (wanted) and starts
// and stops scanners to match. Ownership calls it when the live replicas
// change, the stranded search when the stranded slots do.
func (f *Forwarder) reassign(ctx context.Context) (gained, lost, owned int) {
	f.assignMu.Lock()
	defer f.assignMu.Unlock()
	want := f.wanted()
	gained, lost = diff(f.ownedSlots(), want)
	f.setOwnedAsync(ctx, want)
	return gained, lost, len(want)
}

// wanted are the slots this replica owns: with AllSlots every slot, else
// its share among the live replicas (none while they are unknown); and the
// stranded slots (beyond a topic's slot count), each owned by its
// rendezvous owner (queue.Owner): they are few and come and go. Needs assignMu.
func (f *Forwarder) wanted() map[slotKey]bool {
	want := map[slotKey]bool{}
	switch {
	case f.opt.AllSlots:
		for ti, t := range f.opt.Topics {
			for s := range t.SlotCount() {
				want[slotKey{ti, s}] = true
			}
		}
	case f.live == nil:
		return want
	default:
		want = f.assign(f.live)
	}
	for k := range f.stranded {
		if f.opt.AllSlots || queue.Owner(f.live, f.opt.Topics[k.topic].Name, k.slot) == f.opt.ReplicaID {
			want[k] = true
		}
	}
	return want
}

// assign returns the slots this replica owns among live (see queue.Assign).
func (f *Forwarder) assign(live []string) map[slotKey]bool {
	want := map[slotKey]bool{}
	for ti, t := range f.opt.Topics {
		for s, owner := range queue.Assign(live, t.Name, t.SlotCount()) {
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
func (f *Forwarder) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	if _, err := f.q.Leave(ctx, f.opt.KeyPrefix, f.opt.ReplicaID); err != nil {
		f.log.Warn("could not leave the replica set; the others take its slots when its heartbeat expires",
			"ttl", f.opt.HeartbeatTTL, "err", err)
	}
}
