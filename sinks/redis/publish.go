package redis

import (
	"context"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/sinks"
)

// Publish appends msgs to the stream, in order, in one pipeline, and returns
// after Redis answered every XADD. See sinks.Sink for the meaning of the
// errors. A message over Config.MaxMessageSize fails permanently without
// being sent; the others are appended.
func (s *Sink) Publish(ctx context.Context, msgs []sinks.Message) error {
	if !s.latch.Enter() {
		return s.wrap(sinks.ErrClosed)
	}
	defer s.latch.Leave()
	if err := ctx.Err(); err != nil {
		return s.wrap(err)
	}
	if len(msgs) == 0 {
		return nil
	}

	errs := make([]error, len(msgs))
	args := make([]*goredis.XAddArgs, 0, len(msgs))
	sent := make([]int, 0, len(msgs)) // args[j] is msgs[sent[j]]
	for i := range msgs {
		if n := len(msgs[i].Body); n > s.cfg.MaxMessageSize {
			errs[i] = sinks.Permanent(fmt.Errorf("message %s body is %d bytes, over the %d byte limit of redis stream %s",
				msgs[i].ID, n, s.cfg.MaxMessageSize, s.cfg.Stream))
			continue
		}
		args = append(args, s.xadd(&msgs[i]))
		sent = append(sent, i)
	}
	if len(args) > 0 {
		if err := s.appendAll(ctx, msgs, args, sent, errs); err != nil {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return &sinks.BatchError{Errs: errs}
		}
	}
	return nil
}

// appendAll sends args in one pipeline and sets errs[sent[j]] for each XADD
// that failed. It returns an error instead when ctx ended (the entries may
// have been appended), or when the connection failed and every message of
// msgs was in the pipeline: then nothing is known to be appended.
func (s *Sink) appendAll(ctx context.Context, msgs []sinks.Message, args []*goredis.XAddArgs, sent []int, errs []error) error {
	cmds, _ := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, a := range args {
			p.XAdd(ctx, a)
		}
		return nil
	})
	if err := ctx.Err(); err != nil {
		return s.wrap(err)
	}
	var lost error // the first connection failure
	allLost := len(cmds) == len(msgs)
	for j, c := range cmds {
		err := c.Err()
		if err == nil {
			allLost = false
			continue
		}
		err = s.classify(&msgs[sent[j]], err)
		if errors.Is(err, sinks.ErrNotConnected) {
			if lost == nil {
				lost = err
			}
		} else {
			allLost = false
		}
		errs[sent[j]] = err
	}
	if allLost && lost != nil {
		return lost
	}
	return nil
}

// classify turns go-redis's error about the XADD of m into the sinks error
// classes. A reply error is Redis's answer about the command and counts as
// an attempt, unless it says Redis cannot take writes at the moment
// whatever they hold: that, and any failure to get an answer at all, is a
// connection failure, and Ping reports it for a while.
func (s *Sink) classify(m *sinks.Message, err error) error {
	if errors.Is(err, goredis.ErrClosed) {
		return sinks.NotConnected(s.wrap(sinks.ErrClosed))
	}
	var reply goredis.Error
	if errors.As(err, &reply) && !unavailable(err) {
		return fmt.Errorf("redis refused message %s on stream %s: %w", m.ID, s.cfg.Stream, err)
	}
	err = sinks.NotConnected(s.wrap(err))
	s.hold(err)
	return err
}

// unavailable reports whether a reply error means the node cannot take any
// write now (memory full, loading, a replica, no master, cluster down or
// resharding, not logged in), not that this write is wrong.
func unavailable(err error) bool {
	return goredis.IsOOMError(err) ||
		goredis.IsLoadingError(err) ||
		goredis.IsReadOnlyError(err) ||
		goredis.IsMasterDownError(err) ||
		goredis.IsClusterDownError(err) ||
		goredis.IsTryAgainError(err) ||
		goredis.IsAuthError(err) ||
		goredis.IsMaxClientsError(err)
}

func (s *Sink) wrap(err error) error {
	return fmt.Errorf("append to redis stream %s: %w", s.cfg.Stream, err)
}
