package forwarder

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/internal/opstext"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// A topic that no live replica forwards (registered by a daemon that is gone,
// or scheduled to by a producer whose environment names it: queue.Waiting)
// fills up silently. Every replica counts the due messages of such topics
// every 10 s (the same number on every replica: alert on the max)
// into delaybridge_unforwarded_due_messages, and logs when a topic becomes
// unforwarded with messages due.

// unforwardedMetrics creates and registers the gauge of unforwarded topics.
func (m *Metrics) unforwardedMetrics(reg prometheus.Registerer) {
	m.Unforwarded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "delaybridge", Name: "unforwarded_due_messages",
		Help: "Due messages of a topic that no live replica forwards (no daemon has it in DELAYBRIDGE_TOPICS): " +
			"they wait until one does; the same on every replica.",
	}, []string{"topic"})
	reg.MustRegister(m.Unforwarded)
}

// unforwardedLoop refreshes the gauge of unforwarded topics until ctx ends.
func (f *Forwarder) unforwardedLoop(ctx context.Context) {
	shown := map[string]bool{}
	for {
		f.refreshUnforwarded(ctx, shown)
		if !sleep(ctx, f.opt.unforwardedInterval, nil) {
			return
		}
	}
}

// refreshUnforwarded sets the gauge of each topic no live replica forwards
// to its due messages, and deletes it for the others; shown are the topics
// with a series, kept between calls.
func (f *Forwarder) refreshUnforwarded(ctx context.Context, shown map[string]bool) {
	rctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	ts, err := f.knownTopics(rctx)
	var fw membership.Forwarding
	if err == nil {
		fw, err = membership.New(f.q).Forwarding(rctx, f.opt.KeyPrefix)
	}
	if err != nil {
		if ctx.Err() == nil {
			f.m.RedisErrs.WithLabelValues("stats").Inc()
		}
		return
	}
	due := map[string]int64{}
	for _, t := range ts {
		if !fw.Unforwarded(t.Name) {
			continue
		}
		n, err := f.dueOf(rctx, t)
		if err != nil {
			f.m.RedisErrs.WithLabelValues("stats").Inc()
			return
		}
		due[t.Name] = n
	}
	for name := range shown {
		if _, ok := due[name]; !ok {
			f.m.Unforwarded.DeleteLabelValues(name)
			delete(shown, name)
		}
	}
	for name, n := range due {
		if n > 0 && !shown[name] {
			f.log.Warn(opstext.Unforwarded(fw, name), "topic", name, "count", n)
		}
		f.m.Unforwarded.WithLabelValues(name).Set(float64(n))
		shown[name] = true
	}
}

// knownTopics are the registered topics and the waiting ones (noted by a
// producer, not registered); a waiting note of a registered topic is dropped.
func (f *Forwarder) knownTopics(ctx context.Context) ([]queue.Topic, error) {
	ts, err := f.q.Topics(ctx, f.opt.KeyPrefix)
	if err != nil {
		return nil, err
	}
	waiting, err := f.q.Waiting(ctx, f.opt.KeyPrefix)
	if err != nil {
		return nil, err
	}
	registered := map[string]bool{}
	for _, t := range ts {
		registered[t.Name] = true
	}
	var done []string
	for _, l := range waiting {
		if registered[l.Name] {
			done = append(done, l.Name)
		} else if t := l.Topic(f.opt.KeyPrefix); t.Validate() == nil {
			ts = append(ts, t)
		}
	}
	return ts, f.q.ForgetWaiting(ctx, f.opt.KeyPrefix, done...)
}

// dueOf counts t's due messages over its slots.
func (f *Forwarder) dueOf(ctx context.Context, t queue.Topic) (int64, error) {
	var n int64
	for slot := range t.SlotCount() {
		st, err := f.q.Backlog(ctx, t, slot)
		if err != nil {
			return 0, err
		}
		n += st.Overdue
	}
	return n, nil
}

// topicNames are the names of the topics this replica forwards.
func (f *Forwarder) topicNames() []string {
	out := make([]string, len(f.opt.Topics))
	for i, t := range f.opt.Topics {
		out[i] = t.Name
	}
	return out
}
