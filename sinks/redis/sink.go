// Package redis is delaybridge's Redis stream sink: it appends each due
// message as one entry of a Redis stream (XADD) and reports it published
// only after Redis answered that XADD, for consumers that read Redis
// (consumer groups give them at-least-once delivery).
//
// An entry's fields are documented with FieldID: the message id, topic, due
// time, attempt and body, the routing key if any, and each envelope header
// as "h:<name>". The stream may live on another Redis than the queue: the
// sink uses the client it is given (New) or one of its own (Open).
//
// A Publish sends its batch as one pipeline, so it costs one round trip; on
// Redis Cluster the stream key's slot picks the node. Failures are
// classified for the forwarder: a body over Config.MaxMessageSize is
// permanent; Redis refusing an XADD for its key (WRONGTYPE, NOPERM, any
// other reply error about the command) counts as an attempt, as RabbitMQ's
// refusal does; a connection that fails or a Redis that cannot take writes
// now (OOM, LOADING, READONLY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN, NOAUTH)
// wraps sinks.ErrNotConnected, and Ping reports it for a second after.
//
// go-redis resends a pipeline whose connection broke: an entry may then be
// appended twice. Consumers deduplicate by the id field.
package redis

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/sinks"
)

// holdFor is how long Ping keeps failing after Redis refused a write for
// its state (out of memory, a read-only replica): PING alone would still
// answer, and the forwarder would claim only to return every message.
const holdFor = time.Second

// Sink appends to one Redis stream. It implements sinks.Sink and
// sinks.Pinger and is safe for concurrent use.
type Sink struct {
	cfg    Config
	log    *slog.Logger
	client goredis.UniversalClient
	owns   bool // Close closes client

	latch  sinks.Latch
	mu     sync.Mutex
	heldAt time.Time // when Redis last refused a write for its state
	held   error     // that refusal
}

var (
	_ sinks.Sink   = (*Sink)(nil)
	_ sinks.Pinger = (*Sink)(nil)
)

// New returns a sink that appends with client, which the caller keeps and
// closes after the sink. A nil log means slog.Default().
func New(client goredis.UniversalClient, cfg Config, log *slog.Logger) (*Sink, error) {
	if client == nil {
		return nil, fmt.Errorf("redis sink: no client")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("redis sink config: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Sink{
		cfg:    cfg.withDefaults(),
		log:    log.With("sink", "redis", "stream", cfg.Stream),
		client: client,
	}, nil
}

// Open returns a sink with a client of its own, made from opts, that Close
// closes. It does not connect: the first Publish or Ping does.
func Open(opts *goredis.UniversalOptions, cfg Config, log *slog.Logger) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("redis sink config: %w", err)
	}
	s, err := New(goredis.NewUniversalClient(opts), cfg, log)
	if err != nil {
		return nil, err
	}
	s.owns = true
	return s, nil
}

// Ping reports whether the Redis that holds the stream answers PING (on
// Redis Cluster, the master of the stream key's slot). For a second after
// Redis refused a write for its state it reports that refusal instead.
// Its errors wrap sinks.ErrNotConnected.
func (s *Sink) Ping(ctx context.Context) error {
	if !s.latch.Enter() {
		return sinks.NotConnected(sinks.ErrClosed)
	}
	defer s.latch.Leave()
	s.mu.Lock()
	held, at := s.held, s.heldAt
	s.mu.Unlock()
	if held != nil && time.Since(at) < holdFor {
		return held
	}
	err := s.ping(ctx)
	if ctx.Err() != nil {
		// The caller gave up: that says nothing about Redis.
		return fmt.Errorf("ping redis: %w", sinks.NotConnected(ctx.Err()))
	}
	if err != nil {
		return sinks.NotConnected(fmt.Errorf("ping redis of stream %s: %w", s.cfg.Stream, err))
	}
	return nil
}

func (s *Sink) ping(ctx context.Context) error {
	if cc, ok := s.client.(*goredis.ClusterClient); ok {
		node, err := cc.MasterForKey(ctx, s.cfg.Stream)
		if err != nil {
			return err
		}
		return node.Ping(ctx).Err()
	}
	return s.client.Ping(ctx).Err()
}

// hold makes Ping report err for holdFor.
func (s *Sink) hold(err error) {
	s.mu.Lock()
	s.held, s.heldAt = err, time.Now()
	s.mu.Unlock()
}

// Close waits for the Publish calls under way (each bounded by the
// client's read and write timeouts) and closes the client if the sink made
// it. Publish returns an error wrapping sinks.ErrClosed afterwards. Close is
// idempotent.
func (s *Sink) Close() error {
	if !s.latch.Shut() {
		return nil
	}

	s.latch.Wait()
	if s.owns {
		if err := s.client.Close(); err != nil {
			return fmt.Errorf("close redis client of stream %s: %w", s.cfg.Stream, err)
		}
	}
	return nil
}
