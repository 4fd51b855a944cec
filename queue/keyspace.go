package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Keyspace notifications let a scanner sleep until something happens to its
// slot instead of polling it: with notify-keyspace-events including K (keyspace
// events) and z (sorted-set commands), or K and A (every class), Redis
// publishes "zadd" on __keyspace@<db>__:<key> for every ZADD, including a raw
// one by a producer that never publishes a wake-up. The daemon never changes
// the setting (managed Redis often forbids CONFIG SET): it reads it.

// ErrKeyspaceCluster is returned by KeyspaceFlags on a Redis Cluster: its
// notifications are per node, and the daemon polls there instead.
var ErrKeyspaceCluster = errors.New("keyspace notifications are per node on a Redis Cluster; not used")

// KeyspaceFlags reads notify-keyspace-events (CONFIG GET). An error means the
// setting is unknown: CONFIG may be refused (managed Redis, ACL), and on a
// Redis Cluster the error wraps ErrKeyspaceCluster.
func (q *Queue) KeyspaceFlags(ctx context.Context) (string, error) {
	if _, ok := q.rdb.(*redis.ClusterClient); ok {
		return "", ErrKeyspaceCluster
	}
	res, err := q.rdb.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		return "", fmt.Errorf("config get notify-keyspace-events: %w", err)
	}
	flags, ok := res["notify-keyspace-events"]
	if !ok {
		return "", errors.New("config get notify-keyspace-events: no such setting in the reply")
	}
	return flags, nil
}

// KeyspaceSupport is what a notify-keyspace-events value delivers to the
// daemon.
type KeyspaceSupport struct {
	// Zset: keyspace events of sorted-set commands (K with z or A), enough
	// to claim a raw ZADD at its due time without polling.
	Zset bool
	// All: also hash (h) and generic (g: DEL) events, so every change of a
	// slot's backlog (pause, resume, purge) is announced and idle slots'
	// gauges need not be re-read.
	All bool
}

// ParseKeyspaceFlags reads a notify-keyspace-events value ("" is off).
func ParseKeyspaceFlags(flags string) KeyspaceSupport {
	if !strings.Contains(flags, "K") {
		return KeyspaceSupport{}
	}
	all := strings.Contains(flags, "A")
	has := func(c string) bool { return all || strings.Contains(flags, c) }
	return KeyspaceSupport{Zset: has("z"), All: has("z") && has("h") && has("g")}
}

// KeyEvent is one keyspace notification, or (Subscribed) the news that the
// subscription was made or made again: notifications sent while it was down
// are lost, so whoever relies on them looks at everything again.
type KeyEvent struct {
	Key, Event string
	Subscribed bool
}

// KeyspacePatterns are the PSUBSCRIBE patterns that cover every key of topics:
// one per key prefix for slotted topics, and two per adopted key (the key and
// its derived keys).
func (q *Queue) KeyspacePatterns(topics []Topic) []string {
	db := 0
	if c, ok := q.rdb.(*redis.Client); ok {
		db = c.Options().DB
	}
	head := "__keyspace@" + strconv.Itoa(db) + "__:"
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, t := range topics {
		if t.Key == "" {
			add(head + globEscape(t.KeyPrefix()+":{") + "*")
			continue
		}
		k := t.Keys(0)
		add(head + globEscape(k.Scheduled))
		add(head + globEscape(strings.TrimSuffix(k.Inflight, "inflight")) + "*")
	}
	return out
}

// KeyspaceKey is the key a notification's channel names ("" when the
// channel is not a keyspace channel).
func KeyspaceKey(channel string) string {
	rest, ok := strings.CutPrefix(channel, "__keyspace@")
	if !ok {
		return ""
	}
	_, key, ok := strings.Cut(rest, "__:")
	if !ok {
		return ""
	}
	return key
}

// KeyEvents subscribes to patterns and delivers every keyspace notification,
// and a Subscribed event each time the subscription is made (again), until
// ctx ends; then it closes the channel. A subscription that ends is made again
// after a wakeRetry back-off.
func (q *Queue) KeyEvents(ctx context.Context, patterns []string) <-chan KeyEvent {
	return resubscribe(ctx, func(ctx context.Context, out chan<- KeyEvent) bool {
		return q.relayKeyEvents(ctx, patterns, out)
	})
}

// relayKeyEvents runs one subscription until ctx ends or it closes, and
// reports whether it was ever confirmed. go-redis makes a dropped
// subscription again by itself; its confirmation arrives as a
// *redis.Subscription and is relayed as Subscribed.
func (q *Queue) relayKeyEvents(ctx context.Context, patterns []string, out chan<- KeyEvent) (confirmed bool) {
	ps := q.rdb.PSubscribe(ctx, patterns...)
	ch := ps.ChannelWithSubscriptions()
	defer closeDrained(ps, ch)
	for {
		var ev KeyEvent
		select {
		case <-ctx.Done():
			return confirmed
		case msg, ok := <-ch:
			if !ok {
				return confirmed
			}
			switch m := msg.(type) {
			case *redis.Subscription:
				if m.Kind != "psubscribe" || m.Count != len(patterns) {
					continue // one confirmation per pattern: relay the last
				}
				confirmed = true
				ev.Subscribed = true
			case *redis.Message:
				if ev.Key = KeyspaceKey(m.Channel); ev.Key == "" {
					continue
				}
				ev.Event = m.Payload
			default:
				continue
			}
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return confirmed
		}
	}
}

// closeDrained closes a subscription and reads its channel until go-redis
// closes it. go-redis's relay goroutine may be blocked handing over a
// message nobody reads any more; it gives up only after the channel's send
// timeout (a minute), so without the drain it outlives its subscriber.
func closeDrained[T any](ps *redis.PubSub, ch <-chan T) {
	_ = ps.Close()
	for range ch {
	}
}
