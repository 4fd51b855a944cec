package forwarder

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the pipeline's Prometheus metrics. Labels stay low-cardinality:
// topic, outcome, state; never a message id or a slot number.
type Metrics struct {
	Claimed   *prometheus.CounterVec   // topic
	Published *prometheus.CounterVec   // topic: confirmed by the broker
	Retried   *prometheus.CounterVec   // topic: failed, waiting for another attempt
	Dead      *prometheus.CounterVec   // topic: moved to the dead set
	Released  *prometheus.CounterVec   // topic: returned without an attempt (connection lost, shutdown)
	Reaped    *prometheus.CounterVec   // topic: expired leases returned
	Failures  *prometheus.CounterVec   // topic, outcome (broker, connection, permanent, timeout)
	Lateness  *prometheus.HistogramVec // topic: confirm time − due time
	Latency   *prometheus.HistogramVec // topic: Publish call duration
	Backlog   *prometheus.GaugeVec     // topic, state (scheduled, overdue, inflight, dead)
	Owned     *prometheus.GaugeVec     // topic: slots this replica scans
	Replicas  prometheus.Gauge         // live replicas seen in the heartbeat set
	RedisErrs *prometheus.CounterVec   // op: failed Redis calls
}

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
		Released:  counter("released_total", "Claimed messages returned without using an attempt (connection lost, shutdown).", "topic"),
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
			Help: "Messages by state in the slots this replica owns (sum over replicas for the topic).",
		}, []string{"topic", "state"}),
		Owned: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "delaybridge", Name: "owned_slots",
			Help: "Slots this replica scans.",
		}, []string{"topic"}),
		Replicas: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "delaybridge", Name: "replicas",
			Help: "Live replicas in the heartbeat set.",
		}),
	}
	reg.MustRegister(m.Lateness, m.Latency, m.Backlog, m.Owned, m.Replicas)
	return m
}
