package console

import (
	"context"
	"errors"
	"fmt"

	"github.com/delaybridge/delaybridge/queue"
)

// The console finds topics as the CLI does: the configured ones, each
// checked against the registry, or every registered one when none is
// configured.

// errUnknownTopic is a topic neither configured nor registered.
var errUnknownTopic = errors.New("unknown topic")

// layouts are the topics the console shows, sorted as configured or by name.
func (s *Server) layouts(ctx context.Context) ([]queue.Layout, error) {
	if len(s.opts.Configured) == 0 {
		return s.opts.Queue.Layouts(ctx, s.opts.Prefix)
	}
	out := make([]queue.Layout, len(s.opts.Configured))
	for i, l := range s.opts.Configured {
		if err := s.opts.Queue.CheckTopic(ctx, l.Topic(s.opts.Prefix)); err != nil {
			return nil, err
		}
		out[i] = l
	}
	return out, nil
}

// layout finds one topic by name; the error wraps errUnknownTopic when it
// is neither configured nor registered.
func (s *Server) layout(ctx context.Context, name string) (queue.Layout, queue.Topic, error) {
	for _, l := range s.opts.Configured {
		if l.Name == name {
			t := l.Topic(s.opts.Prefix)
			return l, t, s.opts.Queue.CheckTopic(ctx, t)
		}
	}
	if len(s.opts.Configured) == 0 {
		l, ok, err := s.opts.Queue.Layout(ctx, s.opts.Prefix, name)
		if err != nil {
			return queue.Layout{}, queue.Topic{}, err
		}
		if ok {
			t := l.Topic(s.opts.Prefix)
			if err := t.Validate(); err != nil {
				return queue.Layout{}, queue.Topic{}, fmt.Errorf("registry: %w", err)
			}
			return l, t, nil
		}
	}
	return queue.Layout{}, queue.Topic{}, fmt.Errorf("topic %q: %w", name, errUnknownTopic)
}

// destination says where a topic's messages go.
func destination(l queue.Layout) string {
	switch l.Sink {
	case "amqp":
		ex := l.Exchange
		if ex == "" {
			ex = "(default exchange)"
		}
		rk := l.RoutingKey
		if rk == "" {
			rk = l.Name
		}
		return "exchange " + ex + ", routing key " + rk
	case "kafka":
		return "Kafka topic " + l.KafkaTopic
	case "redis":
		return "stream " + l.Stream
	}
	return "—"
}
