package forwarder

import (
	"context"
	"time"

	"github.com/delaybridge/delaybridge/flowstate"
)

// Whether a topic is held by its flow control is known only here, in the
// scanners that wait (gate.go). heldLoop tells stats and the console: every
// heldInterval it reports each topic that one of this replica's scanners
// held since the last report (flowstate.ReportHeld: why, and the hold queue's
// depth last read), renewing the report while the topic stays held and
// deleting it once when it no longer is. A report lives heldTTL, so one of
// a replica that died expires by itself. A replica whose topics are not
// held writes nothing.

const (
	heldInterval = time.Second
	heldTTL      = 3 * heldInterval
)

// Bits of flowTopic.heldSeen.
const (
	heldSeenRate uint32 = 1 << iota
	heldSeenQueue
)

// heldLoop reports the held topics every heldInterval until ctx ends, then
// deletes this replica's reports.
func (f *Forwarder) heldLoop(ctx context.Context) {
	reported := make([]bool, len(f.flows))
	for sleep(ctx, heldInterval, nil) {
		for i, ft := range f.flows {
			h := ft.heldNow()
			if h == nil && !reported[i] {
				continue
			}
			if f.reportHeld(ctx, ft, h) {
				reported[i] = h != nil
			}
		}
	}
	for i, ft := range f.flows {
		if reported[i] {
			f.reportHeld(context.WithoutCancel(ctx), ft, nil)
		}
	}
}

// reportHeld writes (h nil: deletes) this replica's report of ft's topic.
func (f *Forwarder) reportHeld(ctx context.Context, ft *flowTopic, h *flowstate.Held) bool {
	rctx, cancel := context.WithTimeout(ctx, redisTimeout)
	err := f.flowState.ReportHeld(rctx, ft.t.Topic, f.opt.ReplicaID, h, heldTTL)
	cancel()
	if err != nil && ctx.Err() == nil {
		f.m.RedisErrs.WithLabelValues("held").Inc()
		f.log.Debug("reporting whether the topic is held failed", "topic", ft.t.Name, "err", err)
	}
	return err == nil
}

// heldNow is what this replica reports of ft's topic: why its scanners
// were held since the last report, and the hold queue's depth last read
// (-1 when not read or the read failed); nil when none was held.
func (ft *flowTopic) heldNow() *flowstate.Held {
	seen := ft.heldSeen.Swap(0)
	var h flowstate.Held
	if ft.heldRate.Load() > 0 || seen&heldSeenRate != 0 {
		h.Reasons = append(h.Reasons, heldRate)
	}
	if ft.heldQueue.Load() > 0 || seen&heldSeenQueue != 0 {
		h.Reasons = append(h.Reasons, heldQueue)
	}
	if len(h.Reasons) == 0 {
		return nil
	}
	h.Depth = -1
	if ft.hold.Load() >= 0 {
		ft.mu.Lock()
		if !ft.reading.at.IsZero() && ft.reading.err == nil {
			h.Depth = ft.reading.depth
		}
		ft.mu.Unlock()
	}
	return &h
}
