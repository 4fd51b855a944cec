package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/internal/backoff"
	"github.com/delaybridge/delaybridge/queue"
)

// The topic registry (<prefix>:topics) as the daemon writes it and the CLI
// reads it: the daemon records its topics' layouts at start, and the
// commands need only the Redis connection and the prefix.

// layoutOf is the registry entry of one configured topic.
func layoutOf(prefix string, t config.Topic) queue.Layout {
	l := queue.LayoutOf(t.Queue(prefix))
	l.Sink = t.Sink
	switch t.Sink {
	case "amqp":
		l.Exchange, l.RoutingKey = t.Exchange, t.RoutingKey
	case "kafka":
		l.KafkaTopic = t.KafkaTopic
	case "redis":
		l.Stream = t.Stream
	}
	return l
}

// registerTopics records the configured topics in the registry. A layout
// that disagrees with the one live replicas forward by fails with
// queue.ErrLayoutMismatch (the daemon exits 2); without live replicas the
// new layout takes over and each change is logged at WARN. Redis being
// unreachable is retried until ctx ends: the daemon cannot forward anything
// before it can register anyway. A registry that agrees needs no write; a
// write refused because Redis is full returns queue.ErrRedisFull at once:
// the caller forwards meanwhile (see registerWhenRoom).
func registerTopics(ctx context.Context, q *queue.Queue, cfg config.Config, log *slog.Logger) error {
	wait := backoff.Policy{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	ls := make([]queue.Layout, len(cfg.Topics))
	for i, t := range cfg.Topics {
		ls[i] = layoutOf(cfg.KeyPrefix, t)
	}
	for n := 0; ; n++ {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		changes, err := q.Register(rctx, cfg.KeyPrefix, cfg.ReplicaID, ls)
		cancel()
		if err == nil {
			logChanges(log, changes)
			return nil
		}
		if errors.Is(err, queue.ErrLayoutMismatch) || errors.Is(err, queue.ErrRedisFull) || ctx.Err() != nil {
			return err
		}
		log.Warn("register topics failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait.Delay(n)):
		}
	}
}

// startRegistry registers the topics before the daemon forwards. On a full
// Redis it returns at once and writes the registry in the background once
// Redis has room (the layouts were checked: only the write waits, and
// delivering is what makes room); stop ends that. stop is nil with a nil
// error when ctx ended first: nothing is to be forwarded.
func startRegistry(ctx context.Context, q *queue.Queue, cfg config.Config, log *slog.Logger) (stop func(), err error) {
	err = registerTopics(ctx, q, cfg, log)
	switch {
	case err == nil:
		return func() {}, nil
	case errors.Is(err, queue.ErrRedisFull):
		log.Warn("Redis is full: the topic registry is written once it has room; forwarding meanwhile", "err", err)
		return runUntilStopped(ctx, func(ctx context.Context) { registerWhenRoom(ctx, q, cfg, log) }), nil
	case ctx.Err() != nil && !errors.Is(err, queue.ErrLayoutMismatch):
		log.Warn("stopped before the topics could be registered; nothing was claimed", "err", err)
		return nil, nil
	}
	return nil, err
}

// registerRoomEvery is how often registerWhenRoom tries the write again.
const registerRoomEvery = 5 * time.Second

// registerWhenRoom writes the registry once a full Redis accepts it, until
// ctx ends. The layouts were checked against the registry and the live
// replicas before the write was refused, so the daemon forwards meanwhile.
func registerWhenRoom(ctx context.Context, q *queue.Queue, cfg config.Config, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(registerRoomEvery):
		}
		err := registerTopics(ctx, q, cfg, log)
		switch {
		case err == nil:
			log.Info("topic registry written: Redis has room again")
			return
		case ctx.Err() != nil:
			return
		case !errors.Is(err, queue.ErrRedisFull):
			log.Error("register topics failed", "err", err)
			return
		}
	}
}

func logChanges(log *slog.Logger, changes []queue.Change) {
	for _, c := range changes {
		if c.Replaced {
			log.Warn("topic layout changed: no live replica forwards by the old one, taking the registry over",
				"topic", c.New.Name, "old", c.Old.String(), "new", c.New.String())
		} else {
			log.Info("topic registered", "topic", c.New.Name, "layout", c.New.String())
		}
	}
}

// registryTimeout bounds the CLI's reads of the registry.
const registryTimeout = 5 * time.Second

// topicFromRegistry is the topic named for a command: its configured
// settings, checked against the registry, or the registry's entry when it
// is not configured.
func (c *cli) topicFromRegistry(name string) (queue.Topic, error) {
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	for _, t := range c.cfg.Topics {
		if t.Name == name {
			qt := t.Queue(c.cfg.KeyPrefix)
			if err := c.q.CheckTopic(ctx, qt); err != nil {
				return queue.Topic{}, err
			}
			return qt, nil
		}
	}
	t, err := c.q.Topic(ctx, c.cfg.KeyPrefix, name)
	t = c.cfg.MessageSize.Apply(t)
	if errors.Is(err, queue.ErrUnknownTopic) {
		return queue.Topic{}, said{fmt.Sprintf("unknown topic %q: not in DELAYBRIDGE_TOPICS nor registered in %s (registered: %s)",
			name, queue.TopicsKey(c.cfg.KeyPrefix), c.registeredNames(ctx)), err}
	}
	return t, err
}

// said is an error whose message already says all its cause would: it
// reads once, and errors.Is still finds the cause.
type said struct {
	msg   string
	cause error
}

func (e said) Error() string { return e.msg }
func (e said) Unwrap() error { return e.cause }

// registeredNames lists the registry's topics for an error message.
func (c *cli) registeredNames(ctx context.Context) string {
	ts, err := c.q.Topics(ctx, c.cfg.KeyPrefix)
	if err != nil || len(ts) == 0 {
		return "none"
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// allTopics are the configured topics (each checked against the registry),
// or, when none is configured, every registered one.
func (c *cli) allTopics() ([]queue.Topic, error) {
	if len(c.cfg.Topics) == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
		defer cancel()
		return c.q.Topics(ctx, c.cfg.KeyPrefix)
	}
	out := make([]queue.Topic, len(c.cfg.Topics))
	for i, t := range c.cfg.Topics {
		qt, err := c.topicFromRegistry(t.Name)
		if err != nil {
			return nil, err
		}
		out[i] = qt
	}
	return out, nil
}
