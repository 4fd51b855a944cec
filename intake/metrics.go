package intake

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the intakes' Prometheus metrics, labelled by topic (and a
// low-cardinality reason). Every series of a topic exists at 0 from Init on.
type Metrics struct {
	Received  *prometheus.CounterVec // topic: deliveries or records taken from the broker
	Scheduled *prometheus.CounterVec // topic: written to the scheduled set
	// Duplicates, topic: accepted (acked) without a write, their id
	// delivered within the topic's dedup window.
	Duplicates *prometheus.CounterVec
	Rejected   *prometheus.CounterVec // topic, reason (Reasons): written to the dead set instead
	Lag        *prometheus.GaugeVec   // topic: messages waiting in the broker
}

// Reasons a message is rejected, the values of the reason label.
const (
	ReasonBadDelay = "bad_delay"   // x-delay is not a number, or too far ahead
	ReasonBadDue   = "bad_due"     // x-delaybridge-due is not a time that can be honoured
	ReasonTooLarge = "too_large"   // body over the topic's message size limit or the destination's
	ReasonInvalid  = "bad_message" // a header, key or id an envelope cannot carry
)

// Reasons lists every reason label value.
var Reasons = []string{ReasonBadDelay, ReasonBadDue, ReasonTooLarge, ReasonInvalid}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "delaybridge", Name: name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	m := &Metrics{
		Received:   counter("intake_received_total", "Messages the intake took from its broker (AMQP deliveries, Kafka records), redeliveries included.", "topic"),
		Scheduled:  counter("intake_scheduled_total", "Messages the intake scheduled in Redis.", "topic"),
		Duplicates: counter("intake_duplicates_total", "Messages the intake accepted without scheduling them: their id was delivered within the topic's dedup window (DELAYBRIDGE_TOPIC_<NAME>_DEDUP_WINDOW).", "topic"),
		Rejected:   counter("intake_rejected_total", "Messages the intake could not schedule and put in the dead set, by reason.", "topic", "reason"),
		Lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "delaybridge", Name: "intake_lag_messages",
			Help: "Messages waiting for the intake in its broker: ready messages of the AMQP queue, consumer lag of the Kafka group.",
		}, []string{"topic"}),
	}
	reg.MustRegister(m.Lag)
	return m
}

// Init creates every series of topic at 0.
func (m *Metrics) Init(topic string) {
	m.Received.WithLabelValues(topic)
	m.Scheduled.WithLabelValues(topic)
	m.Duplicates.WithLabelValues(topic)
	for _, r := range Reasons {
		m.Rejected.WithLabelValues(topic, r)
	}
	m.Lag.WithLabelValues(topic)
}
