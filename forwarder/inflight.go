package forwarder

import (
	"context"
	"sync"
	"sync/atomic"
)

// inflight counts one slot's claimed messages that are not settled yet
// (acked, returned, retried or dead-lettered) and lets the claimer wait for
// room.
//
// It also keeps the slot's order across a lost connection: once a batch
// comes back unpublished or unconfirmed, the batches claimed after it must
// not be published before it is claimed again, so they go back too
// (unpublished), and the claimer waits until nothing is in flight any more.
type inflight struct {
	mu     sync.Mutex
	wanted chan struct{} // signalled when the claimer waits for room
	n      int
	broken bool          // a batch went back; later ones follow until n is 0
	epoch  uint64        // counts the breaks: a batch claimed in an older epoch goes back
	freed  chan struct{} // signalled when messages are settled
	// topic sums the counts of every slot of the topic on this replica
	// (flow control's queue depth limit counts them); nil: none.
	topic *atomic.Int64
}

func newInflight(topic *atomic.Int64) *inflight {
	return &inflight{freed: make(chan struct{}, 1), wanted: make(chan struct{}, 1), topic: topic}
}

// waitRoom waits until a claim may take more messages and returns how many:
// at most batch, and no more than max in flight in all. While the slot is
// backlogged it waits for room for a whole batch, so a burst is claimed in
// full batches; otherwise any room will do, so a trickle of messages is not
// kept waiting behind the confirms of earlier ones. It also returns the epoch
// the claim belongs to. ok is false when ctx ended.
func (in *inflight) waitRoom(ctx context.Context, batch, max int, backlogged bool) (limit int, epoch uint64, ok bool) {
	need := 1
	if backlogged {
		need = min(batch, max)
	}
	for {
		in.mu.Lock()
		room, broken, epoch := max-in.n, in.broken, in.epoch
		in.mu.Unlock()
		if !broken && room >= need {
			return min(batch, room), epoch, true
		}
		select {
		case in.wanted <- struct{}{}:
		default:
		}
		select {
		case <-in.freed:
		case <-ctx.Done():
			return 0, 0, false
		}
	}
}

// room is how many messages a claim may take now without waiting (0: none,
// or the slot's order is broken) and the epoch it belongs to.
func (in *inflight) room(batch, max int) (limit int, epoch uint64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.broken {
		return 0, in.epoch
	}
	return min(batch, max-in.n), in.epoch
}

func (in *inflight) add(n int) {
	in.mu.Lock()
	in.n += n
	in.mu.Unlock()
	if in.topic != nil {
		in.topic.Add(int64(n))
	}
}

// settle takes n messages out of flight.
func (in *inflight) settle(n int) {
	if in.topic != nil {
		in.topic.Add(-int64(n))
	}
	in.mu.Lock()
	in.n -= n
	if in.n <= 0 {
		in.broken = false // everything claimed before the loss is back
	}
	in.mu.Unlock()
	select {
	case in.freed <- struct{}{}:
	default:
	}
}

// breakOrder records that a batch went back because of its connection.
func (in *inflight) breakOrder() {
	in.mu.Lock()
	in.broken = true
	in.epoch++
	in.mu.Unlock()
}

// stale reports whether a batch claimed in epoch must go back unpublished:
// an earlier batch went back after (or while) it was claimed.
func (in *inflight) stale(epoch uint64) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.broken || in.epoch != epoch
}
