package api

import (
	"context"
	"sync"
	"time"

	"github.com/delaybridge/delaybridge/internal/opstext"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// forwardingTTL is how long the API reuses what it read of which replica
// forwards which topic: a schedule request costs no extra round trip, and a
// daemon that starts or stops shows within a second.
const forwardingTTL = time.Second

// forwarding caches membership.Forwarding for the warning a schedule answers
// with when no live replica forwards the topic.
type forwarding struct {
	mu   sync.Mutex
	at   time.Time
	last membership.Forwarding
}

// unforwarded is the warning for topic t ("" when a live replica forwards
// it, or when that could not be read: the message is accepted either way).
func (s *Server) unforwarded(ctx context.Context, t queue.Topic) string {
	s.fwd.mu.Lock()
	defer s.fwd.mu.Unlock()
	if time.Since(s.fwd.at) > forwardingTTL {
		f, err := membership.New(s.opts.Queue).Forwarding(ctx, s.opts.Prefix)
		if err != nil {
			return ""
		}
		s.fwd.last, s.fwd.at = f, time.Now()
	}
	return opstext.Unforwarded(s.fwd.last, t.Name)
}
