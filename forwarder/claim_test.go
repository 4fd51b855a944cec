package forwarder

import (
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// TestRedisClockIsALowerBoundThatFollowsTheMonotonicClock: at adds the
// local time elapsed since the claim to Redis's time it read; unset, it is
// the local time itself.
func TestRedisClockIsALowerBoundThatFollowsTheMonotonicClock(t *testing.T) {
	local := time.Now()
	c := redisClock{redis: time.UnixMilli(5000), local: local}
	if got := c.at(local.Add(250 * time.Millisecond)); !got.Equal(time.UnixMilli(5250)) {
		t.Errorf("at(claim + 250ms) = %v, want Redis's 5000 ms + 250 ms", got.UnixMilli())
	}
	if got := (redisClock{}).at(local); !got.Equal(local) {
		t.Errorf("unset clock at(t) = %v, want t", got)
	}
}

// TestAMessageClaimedAheadIsDueByItsScoreOnTheLocalClock: a member scored
// d after the claim's Redis now is due d after the claim returned, never
// sooner.
func TestAMessageClaimedAheadIsDueByItsScoreOnTheLocalClock(t *testing.T) {
	after := time.Now()
	h := &aheadClaim{now: time.UnixMilli(10_000), after: after}
	if got := h.dueBy(queue.Claimed{Score: 10_040}); got.Sub(after) != 40*time.Millisecond {
		t.Errorf("dueBy(now + 40 ms) = after + %v, want 40ms", got.Sub(after))
	}
	if got := h.dueBy(queue.Claimed{Score: 9_990}); !got.Before(after) {
		t.Errorf("dueBy of an overdue member = after + %v, want before after", got.Sub(after))
	}
}
