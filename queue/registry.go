package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The topic registry: one HASH, <prefix>:topics, field = topic name, value =
// the topic's Layout as JSON. Every daemon records the layout of the topics
// it forwards when it starts; producers and the CLI read it, so they need
// only the Redis connection and the prefix, and a producer whose own
// settings disagree with the daemon's is refused instead of writing where
// no scanner looks.

// LayoutVersion is the version of the Layout document this code writes. A
// reader accepts any version: fields it does not know are ignored.
const LayoutVersion = 1

// Decisions of the registry; check them with errors.Is.
var (
	// ErrLayoutMismatch: local settings disagree with the registry (or, for
	// a daemon, with the layout a live replica forwards by). The error names
	// both layouts.
	ErrLayoutMismatch = errors.New("topic layout disagrees with the registry")
	// ErrUnknownTopic: the registry has no such topic.
	ErrUnknownTopic = errors.New("topic is not in the registry")
)

// Layout is how one topic is laid out in Redis and where its messages go.
// Slots, Format and Key are the data model every producer must agree on;
// the sink fields are what replicas of one daemon must agree on.
type Layout struct {
	Version int `json:"version"`
	// Name is the topic (the hash field, not part of the document).
	Name   string `json:"-"`
	Slots  int    `json:"slots"`
	Format Format `json:"format"`
	Key    string `json:"key,omitempty"`
	// Sink is "amqp", "kafka" or "redis"; empty when unknown (a producer's
	// own view of a topic has no sink).
	Sink       string `json:"sink,omitempty"`
	Exchange   string `json:"exchange,omitempty"`
	RoutingKey string `json:"routing_key,omitempty"`
	KafkaTopic string `json:"kafka_topic,omitempty"`
	Stream     string `json:"stream,omitempty"`
	// DedupMs is the topic's dedup window in ms (Topic.DedupWindow; 0:
	// none), so producers that know the topic only from the registry
	// (the HTTP API, the CLI) answer a retry of an id in flight as a
	// duplicate too (see putLua). Not part of Same: replicas may roll a new
	// window out one by one.
	DedupMs int64 `json:"dedup_ms,omitempty"`
	// Fair is Topic.Fair: producers that take the topic from the registry
	// (the CLI) index what they schedule in its fair state. Neither
	// SameData nor Same compares it: a fair topic's scripts and the plain
	// ones can run side by side while replicas switch (a plain claim leaves
	// fair entries the fair claim drops).
	Fair bool `json:"fair,omitempty"`
}

// LayoutOf is the data model of t as a Layout (no sink).
func LayoutOf(t Topic) Layout {
	f := t.Format
	if f == "" {
		f = FormatRaw
	}
	return Layout{Version: LayoutVersion, Name: t.Name, Slots: t.slots(), Format: f, Key: t.Key, DedupMs: t.dedupMillis(), Fair: t.Fair}
}

// Topic is the data model of the layout under prefix.
func (l Layout) Topic(prefix string) Topic {
	return Topic{Name: l.Name, Prefix: prefix, Slots: l.Slots, Key: l.Key, Format: l.Format,
		DedupWindow: time.Duration(l.DedupMs) * time.Millisecond, Fair: l.Fair}
}

// String names every field that is set: "slots=8 format=raw sink=amqp
// exchange=events routing_key=orders".
func (l Layout) String() string {
	parts := []string{fmt.Sprintf("slots=%d", l.Slots), "format=" + string(l.Format)}
	for _, f := range [][2]string{{"key", l.Key}, {"sink", l.Sink}, {"exchange", l.Exchange},
		{"routing_key", l.RoutingKey}, {"kafka_topic", l.KafkaTopic}, {"stream", l.Stream}} {
		if f[1] != "" {
			parts = append(parts, f[0]+"="+f[1])
		}
	}
	if l.Fair {
		parts = append(parts, "fair")
	}
	return strings.Join(parts, " ")
}

// SameData reports whether l and o lay the topic's keys out alike: what a
// producer must agree on.
func (l Layout) SameData(o Layout) bool {
	return l.Slots == o.Slots && l.Format == o.Format && l.Key == o.Key
}

// Same reports whether l and o agree on the keys and the destination: what
// the replicas of one daemon must agree on.
func (l Layout) Same(o Layout) bool {
	return l.SameData(o) && l.Sink == o.Sink && l.Exchange == o.Exchange &&
		l.RoutingKey == o.RoutingKey && l.KafkaTopic == o.KafkaTopic && l.Stream == o.Stream
}

// TopicsKey is the HASH of the topic registry (topic → Layout JSON).
func TopicsKey(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + ":topics"
}

func decodeLayout(name, doc string) (Layout, error) {
	var l Layout
	if err := json.Unmarshal([]byte(doc), &l); err != nil {
		return Layout{}, fmt.Errorf("decode layout of topic %s: %w", name, err)
	}
	l.Name = name
	if l.Format == "" {
		l.Format = FormatRaw
	}
	if l.Slots == 0 {
		l.Slots = 1
	}
	return l, nil
}

// Layouts reads the whole registry of prefix, sorted by topic name.
func (q *Queue) Layouts(ctx context.Context, prefix string) ([]Layout, error) {
	key := TopicsKey(prefix)
	all, err := q.hashAll(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("load registry %s: %w", key, err)
	}
	out := make([]Layout, 0, len(all))
	for name, doc := range all {
		l, err := decodeLayout(name, doc)
		if err != nil {
			return nil, fmt.Errorf("load registry %s: %w", key, err)
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Layout reads one topic's layout; ok is false when it is not registered.
func (q *Queue) Layout(ctx context.Context, prefix, name string) (l Layout, ok bool, err error) {
	key := TopicsKey(prefix)
	doc, err := q.rdb.HGet(ctx, key, name).Result()
	if errors.Is(err, redis.Nil) {
		return Layout{}, false, nil
	}
	if err != nil {
		return Layout{}, false, fmt.Errorf("load registry %s: %w", key, err)
	}
	l, err = decodeLayout(name, doc)
	if err != nil {
		return Layout{}, false, fmt.Errorf("load registry %s: %w", key, err)
	}
	return l, true, nil
}

// Topic is the registered topic name under prefix: its data model as the
// daemon that forwards it recorded it. The error wraps ErrUnknownTopic when
// no daemon registered it.
func (q *Queue) Topic(ctx context.Context, prefix, name string) (Topic, error) {
	l, ok, err := q.Layout(ctx, prefix, name)
	if err != nil {
		return Topic{}, err
	}
	if !ok {
		return Topic{}, fmt.Errorf("topic %s in %s: %w", name, TopicsKey(prefix), ErrUnknownTopic)
	}
	t := l.Topic(prefix)
	if err := t.Validate(); err != nil {
		return Topic{}, fmt.Errorf("registry %s: %w", TopicsKey(prefix), err)
	}
	return t, nil
}

// Topics are every registered topic under prefix, sorted by name.
func (q *Queue) Topics(ctx context.Context, prefix string) ([]Topic, error) {
	ls, err := q.Layouts(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]Topic, len(ls))
	for i, l := range ls {
		out[i] = l.Topic(prefix)
		if err := out[i].Validate(); err != nil {
			return nil, fmt.Errorf("registry %s: %w", TopicsKey(prefix), err)
		}
	}
	return out, nil
}

// CheckTopic compares a topic a producer configured itself with the
// registry: a topic registered with another slot count, format or key is
// refused with an error wrapping ErrLayoutMismatch that names both layouts
// (its messages would land where no scanner looks, or be read wrongly). A
// topic not registered yet passes.
func (q *Queue) CheckTopic(ctx context.Context, t Topic) error {
	l, ok, err := q.Layout(ctx, t.KeyPrefix(), t.Name)
	if err != nil || !ok {
		return err
	}
	if local := LayoutOf(t); !local.SameData(l) {
		return fmt.Errorf("topic %s: local settings (%s) vs registry %s (%s): %w: "+
			"use the registered settings, or change the registry: restart every daemon replica with the new ones "+
			"(with none left on the old ones, the first to start takes the registry over) or `delaybridge topics set %s`",
			t.Name, local, TopicsKey(t.KeyPrefix()), l, ErrLayoutMismatch, t.Name)
	}
	return nil
}
