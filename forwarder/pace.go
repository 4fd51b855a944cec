package forwarder

import (
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// On a fair topic a backlogged slot sizes its claims by its own drain rate
// (pace), not by BatchSize, and keeps one of them in flight, not
// MaxInflightBatches (a slot that is not backlogged keeps as many paced
// claims as that, so a trickle does not wait for confirms): a key whose first message falls due while another
// key's burst drains waits for what the slot has claimed ahead of it, and
// goes out near the front of the next claim (the fair claim returns due
// members in the order taken). At BatchSize 500 that was up to 1,000 of the
// burst's messages per slot, ~700 ms on two cores (bench fair-share); a
// claim of fairClaimTime of the slot's rate keeps the wait near
// fairClaimTime. Two such claims in flight doubled it (p99 121-141 ms at
// ~12,000 msg/s, 8 slots) for little rate: the broker is kept busy by the
// claim in flight while the next is made, and by the other slots (one in
// flight: p99 42-52 ms, 0.88-1.08x a plain topic's rate in ten runs; one
// slot: 32 ms at 0.98x, two in flight 53 ms at 1.08x). 8 ms claims cost
// rate (0.49-0.84x). A claim is never smaller than fairBatchMin (its round
// trip and its publish's fixed cost are spread over that many) nor larger
// than BatchSize.
const (
	fairClaimTime = 15 * time.Millisecond
	fairBatchMin  = 16
	// paceWeight is the weight of a new sample in the smoothed rate.
	paceWeight = 0.25
)

// pace measures how fast a backlogged slot drains: while it is
// backlogged, a claim waits for room for a whole batch, so the claims come
// as fast as the slot's messages are confirmed.
type pace struct {
	at   time.Time // when the last claim returned
	took int       // what it took
	full bool      // it took all it was allowed (the slot is backlogged)
	rate float64   // messages per second, smoothed; 0: not measured yet
}

// claimed records a claim that took took messages of the limit it was
// given, returning at now.
func (p *pace) claimed(took, limit int, now time.Time) {
	if p.full {
		if d := now.Sub(p.at).Seconds(); d > 0 {
			sample := float64(p.took) / d
			if p.rate == 0 {
				p.rate = sample
			} else {
				p.rate += paceWeight * (sample - p.rate)
			}
		}
	}
	p.at, p.took, p.full = now, took, took >= limit && limit > 0
}

// batch is how many messages a claim of the slot takes at most: batch
// (BatchSize) scaled down to fairClaimTime of the measured rate, at least
// fairBatchMin; fairBatchMin until a rate is measured.
func (p *pace) batch(batch int) int {
	n := int(p.rate * fairClaimTime.Seconds())
	return min(max(n, fairBatchMin), batch)
}

// paceOf is a fair topic's pace, nil for any other topic.
func paceOf(t queue.Topic) *pace {
	if !t.Fair {
		return nil
	}
	return &pace{}
}
