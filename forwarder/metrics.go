package forwarder

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the pipeline's Prometheus metrics. Labels stay low-cardinality:
// topic, outcome, state; never a message id or a slot number.
//
// Every series the pipeline can emit exists from the start at 0: the op
// series in NewMetrics, the per-topic ones when New sees the topics. A
// counter that first appeared at its first event would start at 1, and
// increase() and rate() would never see that event: an alert on the first
// dead letter of a topic would stay quiet.
type Metrics struct {
	Claimed   *prometheus.CounterVec   // topic
	Published *prometheus.CounterVec   // topic: confirmed by the broker
	Retried   *prometheus.CounterVec   // topic: failed, waiting for another attempt
	Dead      *prometheus.CounterVec   // topic: moved to the dead set
	Released  *prometheus.CounterVec   // topic: returned without an attempt (connection lost, shutdown)
	Reaped    *prometheus.CounterVec   // topic: expired leases returned
	Failures  *prometheus.CounterVec   // topic, outcome (failureOutcomes)
	Lateness  *prometheus.HistogramVec // topic: confirm time − due time
	Latency   *prometheus.HistogramVec // topic: Publish call duration
	Backlog   *prometheus.GaugeVec     // topic, state (backlogStates)
	Overdue   *prometheus.GaugeVec     // topic: age of the oldest overdue message
	Owned     *prometheus.GaugeVec     // topic: slots this replica scans
	Paused    *prometheus.GaugeVec     // topic: 1 while the topic is paused
	Replicas  prometheus.Gauge         // live replicas seen in the heartbeat set
	Stranded  *prometheus.GaugeVec     // topic: messages in slots beyond the slot count
	// Unforwarded: topic: due messages of a topic no live replica forwards.
	Unforwarded *prometheus.GaugeVec
	RedisErrs   *prometheus.CounterVec // op (redisOps): failed Redis calls
	// KeyspaceEvents is 1 for the keyspace notification mode in force
	// (keyspaceModes: poll, zset, all), 0 for the others.
	KeyspaceEvents *prometheus.GaugeVec
	// SinkBlocked is 1 for topic, reason while the topic's broker blocks
	// publishing (RabbitMQ connection.blocked); the series goes when the
	// block lifts.
	SinkBlocked *prometheus.GaugeVec
	// Redis's memory as the daemon last read it (INFO memory).
	RedisEvicting *prometheus.GaugeVec // policy: 1 when it may evict any key
	RedisFull     prometheus.Gauge     // 1 while used memory is at maxmemory
	RedisUsed     prometheus.Gauge     // used_memory, bytes
	RedisMax      prometheus.Gauge     // maxmemory, bytes (0: no limit)

	// Flow control (flow.go).
	RateLimit      *prometheus.GaugeVec   // topic: the rate limit in force, 0: none
	HoldQueueDepth *prometheus.GaugeVec   // topic: the hold queue's last reading
	Held           *prometheus.GaugeVec   // topic, reason (heldReasons): 1 while a scanner waits for that limit
	HeldSeconds    *prometheus.CounterVec // topic, reason: time scanners waited for that limit, summed over slots

	// Recurrences (recur.go).
	Recurrences    *prometheus.GaugeVec   // topic: recurrences in the owned slots
	FairKeys       *prometheus.GaugeVec   // topic: keys with messages scheduled, per owned slot (fair topics)
	DedupIDs       *prometheus.GaugeVec   // topic: ids remembered for the dedup window in the owned slots
	TicksDelivered *prometheus.CounterVec // topic: ticks the broker confirmed
	TicksSkipped   *prometheus.CounterVec // topic: ticks passed over after a gap
}

// The label values the pipeline emits, created at 0 up front. outcome()
// returns only failureOutcomes; every Redis call site counts its errors under
// one of redisOps (the tests keep both lists honest).
var (
	failureOutcomes = []string{"permanent", "connection", "timeout", "broker"}
	redisOps        = []string{"claim", "extend", "ack", "release", "retry", "reap", "stats", "heartbeat", "stranded", "acquire", "limits", "held", "env"}
	heldReasons     = []string{heldRate, heldQueue}
	backlogStates   = []string{"scheduled", "overdue", "retrying", "inflight", "dead"}
)

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "delaybridge", Name: name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	m := &Metrics{
		Claimed:   counter("claimed_total", "Messages claimed from Redis.", "topic"),
		Published: counter("published_total", "Messages confirmed by the broker and acknowledged in Redis.", "topic"),
		Retried:   counter("retried_total", "Failed publishes put back for another attempt.", "topic"),
		Dead:      counter("dead_total", "Messages moved to the dead set.", "topic"),
		Released:  counter("released_total", "Claimed messages returned without using an attempt (connection lost, shutdown, beyond the rate limit).", "topic"),
		Reaped:    counter("reaped_total", "Expired leases returned to the scheduled set.", "topic"),
		Failures:  counter("publish_failures_total", "Messages the broker did not confirm, by outcome.", "topic", "outcome"),
		RedisErrs: counter("redis_errors_total", "Failed Redis calls by operation.", "op"),
		Lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "delaybridge", Name: "lateness_seconds",
			Help:    "Broker confirm time minus due time.",
			Buckets: []float64{.001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"topic"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "delaybridge", Name: "publish_duration_seconds",
			Help:    "Time from publishing a batch to the broker's last confirm.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"topic"}),
		Backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "delaybridge", Name: "backlog_messages",
			Help: "Messages by state in the slots this replica owns (sum over replicas for the topic). " +
				"retrying: scheduled messages that failed at least once and wait for another attempt (part of scheduled).",
		}, []string{"topic", "state"}),
		Overdue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "delaybridge", Name: "oldest_overdue_seconds",
			Help: "Redis time minus the due time of the oldest overdue message in the slots this replica owns (0 if none; max over replicas for the topic).",
		}, []string{"topic"}),
		Owned: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "delaybridge", Name: "owned_slots",
			Help: "Slots this replica scans.",
		}, []string{"topic"}),
		Paused: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "delaybridge", Name: "topic_paused",
			Help: "1 while the topic is paused (delaybridge pause): nothing of it is claimed.",
		}, []string{"topic"}),
		Replicas: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "delaybridge", Name: "replicas",
			Help: "Live replicas in the heartbeat set.",
		}),
	}
	m.Stranded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "delaybridge", Name: "stranded_messages",
		Help: "Messages in slots beyond the topic's slot count (after a resize down, or from a producer with other settings), " +
			"being drained; the whole topic as this replica's last search found it (the same on every replica).",
	}, []string{"topic"})
	m.KeyspaceEvents = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "delaybridge", Name: "keyspace_events",
		Help: "1 for the mode in force: poll (no keyspace notifications: idle slots are claimed every poll interval), " +
			"zset (sorted-set notifications wake the scanners) or all (also hash and generic ones: idle slots' gauges are not re-read).",
	}, []string{"mode"})
	m.SinkBlocked = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "delaybridge", Name: "sink_blocked",
		Help: "1 while the topic's broker blocks publishing, with the broker's reason (RabbitMQ memory or disk alarm): nothing is claimed, in-flight messages keep their leases.",
	}, []string{"topic", "reason"})
	reg.MustRegister(m.Lateness, m.Latency, m.Backlog, m.Overdue, m.Owned, m.Paused, m.Replicas, m.Stranded, m.KeyspaceEvents, m.SinkBlocked)
	m.newRedisMemory(reg)
	m.flowMetrics(reg)
	m.recurMetrics(reg)
	for _, op := range redisOps {
		m.RedisErrs.WithLabelValues(op)
	}
	return m
}

// initTopic creates every series of one topic at 0 (a gauge already set by
// an earlier Forwarder keeps its value).
func (m *Metrics) initTopic(topic string) {
	for _, c := range []*prometheus.CounterVec{m.Claimed, m.Published, m.Retried, m.Dead, m.Released, m.Reaped} {
		c.WithLabelValues(topic)
	}
	for _, o := range failureOutcomes {
		m.Failures.WithLabelValues(topic, o)
	}
	m.Lateness.WithLabelValues(topic)
	m.Latency.WithLabelValues(topic)
	for _, s := range backlogStates {
		m.Backlog.WithLabelValues(topic, s)
	}
	m.Overdue.WithLabelValues(topic)
	m.Owned.WithLabelValues(topic)
	m.Stranded.WithLabelValues(topic)
	m.Paused.WithLabelValues(topic)
	m.RateLimit.WithLabelValues(topic)
	m.HoldQueueDepth.WithLabelValues(topic)
	m.Recurrences.WithLabelValues(topic)
	m.FairKeys.WithLabelValues(topic)
	m.DedupIDs.WithLabelValues(topic)
	m.TicksDelivered.WithLabelValues(topic)
	m.TicksSkipped.WithLabelValues(topic)
	for _, r := range heldReasons {
		m.Held.WithLabelValues(topic, r)
		m.HeldSeconds.WithLabelValues(topic, r)
	}
}

// flowMetrics creates and registers the flow control's metrics.
func (m *Metrics) flowMetrics(reg prometheus.Registerer) {
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "delaybridge", Name: name, Help: help}, labels)
		reg.MustRegister(g)
		return g
	}
	m.RateLimit = gauge("topic_rate_limit", "The topic's rate limit in force, deliveries per second over every replica (0: none).", "topic")
	m.HoldQueueDepth = gauge("topic_hold_queue_messages", "Ready messages in the topic's hold queue at this replica's last reading.", "topic")
	m.Held = gauge("topic_held", "1 while a scanner of the topic on this replica waits for the limit named by reason (rate, queue).", "topic", "reason")
	m.HeldSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "delaybridge", Name: "topic_held_seconds_total",
		Help: "Time this replica's scanners of the topic waited for a limit (rate, queue), summed over slots; not counted while the topic is paused.",
	}, []string{"topic", "reason"})
	reg.MustRegister(m.HeldSeconds)
	m.unforwardedMetrics(reg) // messages held for want of a forwarder
}

// newRedisMemory creates the gauges of Redis's memory, which the daemon sets
// from INFO memory (Redis that evicts or is full).
func (m *Metrics) newRedisMemory(reg prometheus.Registerer) {
	m.RedisEvicting = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "delaybridge", Name: "redis_evicting",
		Help: "1 while Redis's maxmemory-policy (the label) may evict any key, scheduled messages included: set noeviction.",
	}, []string{"policy"})
	m.RedisFull = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "delaybridge", Name: "redis_full",
		Help: "1 while Redis's used memory is at its maxmemory: it refuses new messages; the backlog still drains.",
	})
	m.RedisUsed = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "delaybridge", Name: "redis_used_memory_bytes",
		Help: "Redis's used_memory (INFO memory; on a cluster, the fullest master's).",
	})
	m.RedisMax = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "delaybridge", Name: "redis_maxmemory_bytes",
		Help: "Redis's maxmemory in bytes (0: no limit).",
	})
	reg.MustRegister(m.RedisEvicting, m.RedisFull, m.RedisUsed, m.RedisMax)
}

// recurMetrics creates and registers the recurrences' metrics and fair_keys
// (a gauge of the same kind: per topic, summed over owned slots).
func (m *Metrics) recurMetrics(reg prometheus.Registerer) {
	m.Recurrences = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "delaybridge", Name: "recurrences",
		Help: "Recurring messages in the slots this replica owns (sum over replicas for the topic).",
	}, []string{"topic"})
	m.TicksDelivered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "delaybridge", Name: "recurrence_ticks_delivered_total",
		Help: "Ticks of recurring messages confirmed by the broker (also counted in published_total).",
	}, []string{"topic"})
	m.TicksSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "delaybridge", Name: "recurrence_ticks_skipped_total",
		Help: "Ticks of recurring messages not delivered because they fell due during a gap (broker down, topic paused, " +
			"no owner): after a gap one tick from inside it is delivered and the schedule continues.",
	}, []string{"topic"})
	reg.MustRegister(m.Recurrences, m.TicksDelivered, m.TicksSkipped)
	m.FairKeys = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "delaybridge", Name: "fair_keys",
		Help: "On a fair topic, the keys with messages scheduled in the slots this replica owns, a key counted once per slot " +
			"it has messages in (sum over replicas for the topic; 0 on other topics). Which keys: delaybridge stats --keys.",
	}, []string{"topic"})
	reg.MustRegister(m.FairKeys)
	m.DedupIDs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "delaybridge", Name: "dedup_ids",
		Help: "Ids remembered for the topic's dedup window in the slots this replica owns (sum over replicas for the topic; " +
			"0 without a window): each costs Redis about 50 to 350 bytes by its length (docs/operations.md).",
	}, []string{"topic"})
	reg.MustRegister(m.DedupIDs)
}
