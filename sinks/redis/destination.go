package redis

import (
	"context"
	"fmt"

	"github.com/delaybridge/delaybridge/sinks"
)

var _ sinks.Checker = (*Sink)(nil)

// CheckDestination (sinks.Checker) reports whether the stream key can take
// entries: absent (the first XADD creates it) or a stream. A key of another
// type fails every XADD with WRONGTYPE, so it is an error wrapping
// sinks.ErrNoDestination that names the key and its type. Redis unreachable
// wraps sinks.ErrNotConnected.
func (s *Sink) CheckDestination(ctx context.Context) error {
	if !s.latch.Enter() {
		return sinks.NotConnected(sinks.ErrClosed)
	}
	defer s.latch.Leave()
	kind, err := s.client.Type(ctx, s.cfg.Stream).Result()
	if err != nil {
		return sinks.NotConnected(fmt.Errorf("check redis stream %s: %w", s.cfg.Stream, err))
	}
	switch kind {
	case "none", "stream":
		return nil
	}
	return sinks.NoDestination(fmt.Errorf("redis key %s is a %s, not a stream: XADD to it fails", s.cfg.Stream, kind))
}
