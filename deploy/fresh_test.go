package deploy

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/forwarder"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// freshTopic is the one topic of the fresh daemon below.
const freshTopic = "x"

// freshSeries maps every metric a daemon serves before anything happened
// (one topic, freshTopic) to the label sets of its series. The dashboard's
// topic picker and the alerts on counters rely on these existing from the
// first scrape; forwarder's TestFreshForwarderExportsEverySeriesAtZero
// lists them one by one.
type freshSeries map[string][]map[string]string

var (
	freshOnce sync.Once
	freshVal  freshSeries
	freshErr  error
)

type nopSink struct{}

func (nopSink) Publish(context.Context, []sinks.Message) error { return nil }
func (nopSink) Close() error                                   { return nil }

// freshDaemon builds the forwarder as the daemon does, without running it,
// and gathers its registry.
func freshDaemon(t *testing.T) freshSeries {
	t.Helper()
	freshOnce.Do(func() {
		reg := prometheus.NewRegistry()
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: nothing runs
		defer rdb.Close()
		if _, freshErr = forwarder.New(forwarder.Options{
			Queue:   queue.New(rdb),
			Topics:  []forwarder.Topic{{Topic: queue.Topic{Name: freshTopic, Prefix: "unused"}, Sink: nopSink{}}},
			Metrics: forwarder.NewMetrics(reg),
		}); freshErr != nil {
			return
		}
		families, err := reg.Gather()
		if err != nil {
			freshErr = err
			return
		}
		freshVal = freshSeries{}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				ls := map[string]string{}
				for _, l := range m.GetLabel() {
					ls[l.GetName()] = l.GetValue()
				}
				freshVal[f.GetName()] = append(freshVal[f.GetName()], ls)
			}
		}
	})
	if freshErr != nil {
		t.Fatalf("a fresh forwarder: %v", freshErr)
	}
	return freshVal
}

// hasTopic reports whether metric (a histogram by its _bucket, _sum or
// _count name too) has a series of freshTopic in a fresh daemon.
func (s freshSeries) hasTopic(metric string) bool {
	base := metric
	for _, x := range []string{"_bucket", "_sum", "_count"} {
		base = strings.TrimSuffix(base, x)
	}
	for _, name := range []string{metric, base} {
		for _, ls := range s[name] {
			if ls["topic"] == freshTopic {
				return true
			}
		}
	}
	return false
}

// TestFreshDaemonServesWhatAlertsOnCountersNeed: an alert on increase() of a
// counter sees the first event only if the series was there at 0 before it.
func TestFreshDaemonServesWhatAlertsOnCountersNeed(t *testing.T) {
	t.Parallel()
	fresh := freshDaemon(t)
	for _, name := range []string{
		"delaybridge_dead_total", "delaybridge_reaped_total", "delaybridge_published_total",
		"delaybridge_publish_failures_total", "delaybridge_lateness_seconds",
		"delaybridge_backlog_messages", "delaybridge_oldest_overdue_seconds",
	} {
		if !fresh.hasTopic(name) {
			t.Errorf("a fresh daemon does not serve %s{topic=%q}", name, freshTopic)
		}
	}
	if len(fresh["delaybridge_redis_errors_total"]) == 0 {
		t.Errorf("a fresh daemon serves no delaybridge_redis_errors_total")
	}
}
