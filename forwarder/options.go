package forwarder

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/delaybridge/delaybridge/internal/logrepeat"
	"github.com/delaybridge/delaybridge/queue"
)

// Options configure a Forwarder. Zero values take their Defaults.
type Options struct {
	Queue  *queue.Queue
	Topics []Topic
	// KeyPrefix holds the replica set, <prefix>:replicas, and the wake
	// channel, <prefix>:wake. Empty means the topics' prefix; every topic's
	// keys must use this prefix (New refuses a topic that does not: its
	// wake-ups would never arrive).
	KeyPrefix string

	// BatchSize is the most messages claimed per round trip (default 500).
	BatchSize int
	// MaxInflightBatches bounds what one slot has claimed and the broker
	// has not yet confirmed to MaxInflightBatches×BatchSize messages
	// (default 2): a slow broker slows claiming. A confirmed batch's ack
	// does not count: the next claim overlaps it. Within that bound a slot may have many small
	// batches in flight, so a trickle of messages does not wait behind the
	// confirms of earlier ones.
	MaxInflightBatches int
	// Lease is how long a claim holds before the reaper returns it (default 30s).
	Lease time.Duration
	// MaxAttempts is how many failed publishes dead-letter a message (default 10).
	MaxAttempts int
	// RetryBackoff is the wait before the first retry, doubled per attempt up
	// to RetryBackoffMax (defaults 1s and 5m).
	RetryBackoff, RetryBackoffMax time.Duration
	// PollInterval is the longest an idle slot sleeps without keyspace
	// notifications (default 1s).
	PollInterval time.Duration
	// KeyspaceEvents is "auto" (default: use Redis's keyspace notifications
	// when notify-keyspace-events delivers them, see keyspace.go) or "off".
	KeyspaceEvents string
	// KeyspacePollInterval is the longest an idle slot sleeps while keyspace
	// notifications are used (default 1m): a safety net only, since a ZADD
	// or a wake-up wakes the slot's scanner.
	KeyspacePollInterval time.Duration
	// ShutdownTimeout bounds how long in-flight batches may take once the
	// context ends (default 20s); what is left is returned to Redis.
	ShutdownTimeout time.Duration

	// ReplicaID identifies this replica in the heartbeat set.
	ReplicaID string
	// AllSlots makes this replica scan every slot (no ownership).
	AllSlots bool
	// HeartbeatInterval and HeartbeatTTL drive ownership (defaults 1s, 5s).
	HeartbeatInterval, HeartbeatTTL time.Duration
	// HeartbeatQueue is the queue ownership heartbeats through (default
	// Queue). Give it a client with a connection pool of its own: claims
	// and acks queued for one of Queue's connections then never hold a
	// heartbeat back past its TTL, which would move slots away and back.
	HeartbeatQueue *queue.Queue
	// BacklogInterval is how often backlog gauges are refreshed (default 10s).
	BacklogInterval time.Duration
	// StrandedInterval is how often slots beyond the topics' slot counts
	// are searched for (default DefaultStrandedInterval; see stranded.go).
	StrandedInterval time.Duration

	// Flow is the flow control of the topics named (flow.go); a topic
	// not in it has none, unless set at run time.
	Flow map[string]Flow

	Metrics *Metrics
	Log     *slog.Logger
	// RedisHint is what the line that says Redis does not answer adds
	// for a person: where the daemon looks for it and how to test that
	// (the CLI's words). Empty: none.
	RedisHint string
	// Tracing emits a span per publish (trace.go); zero: none.
	Tracing Tracing

	// keyspaceRecheck is how often notify-keyspace-events is read again
	// (default keyspaceRecheck; shorter in tests).
	keyspaceRecheck time.Duration
	// logEvery is how often a repeating failure is logged (default
	// logrepeat.DefaultEvery; shorter in tests).
	logEvery time.Duration
	// redisDownAfter is how long Redis failures last before one ERROR
	// (default defaultRedisDownAfter; shorter in tests).
	redisDownAfter time.Duration
	// unforwardedInterval is how often the gauge of topics no live replica
	// forwards is refreshed (default 10 s; tests shorten it): a pass reads
	// the registry and the replicas, which idle slots must not pay for on
	// the backlog gauges' shorter interval.
	unforwardedInterval time.Duration
}

// Defaults are the values zero Options take: the one place they are
// written. The daemon's variables (config/env.go) document the same values;
// TestConfigDefaultsAreTheForwardersDefaults (internal/cli) fails when
// the two disagree.
func Defaults() Options {
	return Options{
		BatchSize:            500,
		MaxInflightBatches:   2,
		Lease:                30 * time.Second,
		MaxAttempts:          10,
		RetryBackoff:         time.Second,
		RetryBackoffMax:      5 * time.Minute,
		PollInterval:         time.Second,
		KeyspaceEvents:       "auto",
		KeyspacePollInterval: time.Minute,
		ShutdownTimeout:      20 * time.Second,
		HeartbeatInterval:    time.Second,
		HeartbeatTTL:         5 * time.Second,
		BacklogInterval:      10 * time.Second,
		StrandedInterval:     DefaultStrandedInterval,
	}
}

func (o *Options) defaults() error {
	if o.Queue == nil {
		return errors.New("forwarder: no queue")
	}
	if len(o.Topics) == 0 {
		return errors.New("forwarder: no topics")
	}
	if o.HeartbeatQueue == nil {
		o.HeartbeatQueue = o.Queue
	}
	for _, t := range o.Topics {
		if t.Sink == nil {
			return fmt.Errorf("forwarder: topic %s has no sink", t.Name)
		}
		if err := t.Validate(); err != nil {
			return fmt.Errorf("forwarder: %w", err)
		}
	}
	setInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	d := Defaults()
	setInt(&o.BatchSize, d.BatchSize)
	setInt(&o.MaxInflightBatches, d.MaxInflightBatches)
	setInt(&o.MaxAttempts, d.MaxAttempts)
	setDur(&o.Lease, d.Lease)
	setDur(&o.RetryBackoff, d.RetryBackoff)
	setDur(&o.RetryBackoffMax, d.RetryBackoffMax)
	setDur(&o.PollInterval, d.PollInterval)
	setDur(&o.KeyspacePollInterval, d.KeyspacePollInterval)
	switch o.KeyspaceEvents {
	case "":
		o.KeyspaceEvents = d.KeyspaceEvents
	case "auto", "off":
	default:
		return fmt.Errorf("forwarder: keyspace events %q: want auto or off", o.KeyspaceEvents)
	}
	setDur(&o.ShutdownTimeout, d.ShutdownTimeout)
	setDur(&o.HeartbeatInterval, d.HeartbeatInterval)
	setDur(&o.HeartbeatTTL, d.HeartbeatTTL)
	setDur(&o.BacklogInterval, d.BacklogInterval)
	setDur(&o.StrandedInterval, d.StrandedInterval)
	setDur(&o.keyspaceRecheck, keyspaceRecheck)
	setDur(&o.logEvery, logrepeat.DefaultEvery)
	setDur(&o.redisDownAfter, defaultRedisDownAfter)
	setDur(&o.unforwardedInterval, 10*time.Second)
	if o.KeyPrefix == "" {
		o.KeyPrefix = o.Topics[0].KeyPrefix()
	}
	for _, t := range o.Topics {
		if t.KeyPrefix() != o.KeyPrefix {
			return fmt.Errorf("forwarder: topic %s has key prefix %q, not the forwarder's %q", t.Name, t.KeyPrefix(), o.KeyPrefix)
		}
	}
	if o.ReplicaID == "" {
		o.ReplicaID = "delaybridge"
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return nil
}
