package deploy

import (
	"context"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// A synthetic hour of scrapes (every 15s) from two replicas, evaluated with
// Prometheus's own query engine: each alert must fire on the failure it
// describes and stay quiet on a healthy pipeline.

const (
	scrapeEvery = 15 * time.Second
	history     = time.Hour
	// syntheticStart is the Unix time (s) of the first scrape.
	syntheticStart = 1_700_000_000
)

// synthetic is one series: its labels and its value m minutes in.
type synthetic struct {
	labels []string
	value  func(m float64) float64 // NaN: no sample (the target was down)
}

func counterAt(perSecond float64) func(float64) float64 {
	return func(m float64) float64 { return perSecond * 60 * m }
}

func constant(v float64) func(float64) float64 { return func(float64) float64 { return v } }

// stepAt is before until minute at, then after.
func stepAt(at, before, after float64) func(float64) float64 {
	return func(m float64) float64 {
		if m >= at {
			return after
		}
		return before
	}
}

// startingAt is v from minute at, no sample before (the series did not exist).
func startingAt(at float64, v func(float64) float64) func(float64) float64 {
	return func(m float64) float64 {
		if m < at {
			return math.NaN()
		}
		return v(m)
	}
}

// latenessBuckets is a lateness histogram observed at perSecond, a share
// slow of it between 2.5s and 5s late and the rest within 5ms.
func latenessBuckets(instance string, perSecond, slow float64) []synthetic {
	var out []synthetic
	for _, le := range []float64{.001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, math.Inf(1)} {
		share := 0.0
		switch {
		case le >= 5:
			share = 1
		case le >= .005:
			share = 1 - slow
		}
		out = append(out, synthetic{
			labels: []string{"__name__", "delaybridge_lateness_seconds_bucket", "instance", instance, "topic", "orders", "le", strconv.FormatFloat(le, 'g', -1, 64)},
			value:  counterAt(perSecond * share),
		})
	}
	return out
}

type fSample struct {
	t int64
	f float64
}

func (s fSample) T() int64                      { return s.t }
func (s fSample) ST() int64                     { return 0 }
func (s fSample) F() float64                    { return s.f }
func (s fSample) H() *histogram.Histogram       { return nil }
func (s fSample) FH() *histogram.FloatHistogram { return nil }
func (s fSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s fSample) Copy() chunks.Sample           { return s }

type seriesSet struct {
	all []storage.Series
	i   int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i <= len(s.all) }
func (s *seriesSet) At() storage.Series                { return s.all[s.i-1] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

// queryable serves the synthetic series from memory.
func queryable(start time.Time, series []synthetic) storage.Queryable {
	var all []storage.Series
	for _, s := range series {
		var samples []chunks.Sample
		for d := time.Duration(0); d <= history; d += scrapeEvery {
			if v := s.value(d.Minutes()); !math.IsNaN(v) {
				samples = append(samples, fSample{t: start.Add(d).UnixMilli(), f: v})
			}
		}
		all = append(all, storage.NewListSeries(labels.FromStrings(s.labels...), samples))
	}
	slices.SortFunc(all, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	return &storage.MockQueryable{MockQuerier: &storage.MockQuerier{
		SelectMockFunction: func(_ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
			var out []storage.Series
			for _, s := range all {
				if matchesAll(s.Labels(), ms) {
					out = append(out, s)
				}
			}
			return &seriesSet{all: out}
		},
	}}
}

func matchesAll(l labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(l.Get(m.Name)) {
			return false
		}
	}
	return true
}

// fires reports whether rule would be firing at the end of the hour: its
// expression returns something at every minute of its for: window.
func fires(t *testing.T, eng *promql.Engine, rule rulefmt.Rule, series []synthetic) bool {
	t.Helper()
	start := time.Unix(syntheticStart, 0)
	q := queryable(start, series)
	end := start.Add(history)
	for at := end.Add(-time.Duration(rule.For)); !at.After(end); at = at.Add(time.Minute) {
		qry, err := eng.NewInstantQuery(context.Background(), q, nil, rule.Expr, at)
		if err != nil {
			t.Fatalf("%s: %v", rule.Alert, err)
		}
		res := qry.Exec(context.Background())
		qry.Close()
		v, err := res.Vector()
		if err != nil {
			t.Fatalf("%s: %v", rule.Alert, err)
		}
		if len(v) == 0 {
			return false
		}
	}
	return true
}

func series(name string, value func(float64) float64, kv ...string) synthetic {
	return synthetic{labels: append([]string{"__name__", name}, kv...), value: value}
}

// alertScenarios: for every alert, pipelines on which it must fire and
// pipelines on which it must not. An alert without scenarios fails the test.
var alertScenarios = map[string]struct{ firing, quiet map[string][]synthetic }{
	"DelaybridgeNoLiveReplica": {
		firing: map[string][]synthetic{
			"no replica scraped": {series("go_goroutines", constant(10), "instance", "a")},
			"replicas report 0":  {series("delaybridge_replicas", constant(0), "instance", "a")},
		},
		quiet: map[string][]synthetic{
			"two replicas": {series("delaybridge_replicas", constant(2), "instance", "a"), series("delaybridge_replicas", constant(2), "instance", "b")},
		},
	},
	"DelaybridgeOverdueBacklogGrowing": {
		firing: map[string][]synthetic{
			"overdue grows by 20 a minute": {
				series("delaybridge_backlog_messages", func(m float64) float64 { return 20 * m }, "instance", "a", "topic", "orders", "state", "overdue"),
				series("delaybridge_backlog_messages", constant(0), "instance", "b", "topic", "orders", "state", "overdue"),
			},
		},
		quiet: map[string][]synthetic{
			"short bursts drain": {
				series("delaybridge_backlog_messages", func(m float64) float64 {
					if int(m*4)%7 == 0 {
						return 50
					}
					return 0
				}, "instance", "a", "topic", "orders", "state", "overdue"),
				series("delaybridge_backlog_messages", func(m float64) float64 { return 1000 + 30*m }, "instance", "a", "topic", "orders", "state", "scheduled"),
			},
			"a steady few overdue (busy, keeping up)": {
				series("delaybridge_backlog_messages", constant(5), "instance", "a", "topic", "orders", "state", "overdue"),
			},
			"a burst at minute 40, draining": {
				series("delaybridge_backlog_messages", func(m float64) float64 {
					if m < 40 {
						return 0
					}
					return max(0, 5000-250*(m-40))
				}, "instance", "a", "topic", "orders", "state", "overdue"),
			},
		},
	},
	"DelaybridgeLatenessHigh": {
		firing: map[string][]synthetic{"5% of messages 2.5-5s late": append(latenessBuckets("a", 100, .05), latenessBuckets("b", 100, .05)...)},
		quiet:  map[string][]synthetic{"all within 5ms": append(latenessBuckets("a", 100, 0), latenessBuckets("b", 100, 0)...)},
	},
	"DelaybridgeDeadSetGrowing": {
		firing: map[string][]synthetic{
			"one death at minute 50": {series("delaybridge_dead_total", stepAt(50, 5, 6), "instance", "a", "topic", "orders")},
			// The daemon exports the series at 0 from its start (forwarder's
			// TestFreshForwarderExportsEverySeriesAtZero): the first death is
			// a step from 0 to 1.
			"a topic's first death at minute 50": {
				series("delaybridge_dead_total", stepAt(50, 0, 1), "instance", "a", "topic", "orders"),
				series("process_start_time_seconds", constant(syntheticStart), "instance", "a"),
			},
			"the first death of a pod before its first scrape": {
				series("delaybridge_dead_total", startingAt(55, constant(1)), "instance", "b", "topic", "orders"),
				series("process_start_time_seconds", startingAt(55, constant(syntheticStart+55*60)), "instance", "b"),
			},
		},
		quiet: map[string][]synthetic{
			"old deaths only": {
				series("delaybridge_dead_total", constant(5), "instance", "a", "topic", "orders"),
				series("process_start_time_seconds", constant(syntheticStart-3600), "instance", "a"),
			},
			"a fresh pod without deaths": {
				series("delaybridge_dead_total", startingAt(55, constant(0)), "instance", "b", "topic", "orders"),
				series("process_start_time_seconds", startingAt(55, constant(syntheticStart+55*60)), "instance", "b"),
			},
		},
	},
	"DelaybridgeOldestOverdueHigh": {
		firing: map[string][]synthetic{
			"nothing claimed since minute 40": {
				series("delaybridge_oldest_overdue_seconds", func(m float64) float64 { return max(0, 60*(m-40)) }, "instance", "a", "topic", "orders"),
				series("delaybridge_oldest_overdue_seconds", constant(0), "instance", "b", "topic", "orders"),
			},
		},
		quiet: map[string][]synthetic{
			"busy, a few seconds behind": {series("delaybridge_oldest_overdue_seconds", constant(3), "instance", "a", "topic", "orders")},
			"a two-minute stall at minute 50, drained": {series("delaybridge_oldest_overdue_seconds", func(m float64) float64 {
				if m >= 50 && m < 52 {
					return 60 * (m - 50)
				}
				return 0
			}, "instance", "a", "topic", "orders")},
		},
	},
	"DelaybridgePublishFailing": {
		firing: map[string][]synthetic{
			"9% fail": {
				series("delaybridge_published_total", counterAt(100), "instance", "a", "topic", "orders"),
				series("delaybridge_publish_failures_total", counterAt(10), "instance", "a", "topic", "orders", "outcome", "broker"),
			},
			"broker down, nothing published": {
				series("delaybridge_published_total", constant(500), "instance", "a", "topic", "orders"),
				series("delaybridge_publish_failures_total", counterAt(0.1), "instance", "a", "topic", "orders", "outcome", "connection"),
			},
		},
		quiet: map[string][]synthetic{
			"1% fail": {
				series("delaybridge_published_total", counterAt(100), "instance", "a", "topic", "orders"),
				series("delaybridge_publish_failures_total", counterAt(1), "instance", "a", "topic", "orders", "outcome", "broker"),
			},
			"idle": {
				series("delaybridge_published_total", constant(0), "instance", "a", "topic", "orders"),
				series("delaybridge_publish_failures_total", constant(0), "instance", "a", "topic", "orders", "outcome", "broker"),
			},
		},
	},
	"DelaybridgeRedisErrors": {
		firing: map[string][]synthetic{"stats keeps failing": {series("delaybridge_redis_errors_total", counterAt(0.5), "instance", "a", "op", "stats")}},
		quiet:  map[string][]synthetic{"an old error": {series("delaybridge_redis_errors_total", constant(3), "instance", "a", "op", "stats")}},
	},
	"DelaybridgeStrandedMessages": {
		firing: map[string][]synthetic{
			"a producer with another slot count keeps writing": {
				series("delaybridge_stranded_messages", func(m float64) float64 { return float64(5 + int(m)%20) }, "instance", "a", "topic", "orders"),
				series("delaybridge_stranded_messages", constant(0), "instance", "b", "topic", "orders"),
			},
		},
		quiet: map[string][]synthetic{
			"a resize at minute 30, drained in a minute (the gauge follows the drain)": {
				series("delaybridge_stranded_messages", func(m float64) float64 {
					if m >= 30 && m < 31 {
						return 1041
					}
					return 0
				}, "instance", "a", "topic", "orders"),
			},
			"none": {series("delaybridge_stranded_messages", constant(0), "instance", "a", "topic", "orders")},
		},
	},
	"DelaybridgeTopicNotForwarded": {
		firing: map[string][]synthetic{
			"payments scheduled to, no daemon runs it": {
				series("delaybridge_unforwarded_due_messages", startingAt(20, func(m float64) float64 { return m - 19 }), "instance", "a", "topic", "payments"),
				series("delaybridge_unforwarded_due_messages", startingAt(20, func(m float64) float64 { return m - 19 }), "instance", "b", "topic", "payments"),
			},
		},
		quiet: map[string][]synthetic{
			"a daemon with payments took over after two minutes (the series goes away)": {
				series("delaybridge_unforwarded_due_messages", func(m float64) float64 {
					if m >= 30 && m < 32 {
						return 3
					}
					return math.NaN()
				}, "instance", "a", "topic", "payments"),
			},
			"no series": {series("delaybridge_replicas", constant(2), "instance", "a")},
		},
	},
	"DelaybridgeRedisEvicting": {
		firing: map[string][]synthetic{"allkeys-lru": {series("delaybridge_redis_evicting", constant(1), "instance", "a", "policy", "allkeys-lru")}},
		quiet:  map[string][]synthetic{"noeviction": {series("delaybridge_redis_evicting", constant(0), "instance", "a", "policy", "noeviction")}},
	},
	"DelaybridgeRedisFull": {
		firing: map[string][]synthetic{"full for the last half hour": {series("delaybridge_redis_full", stepAt(30, 0, 1), "instance", "a")}},
		quiet:  map[string][]synthetic{"full for a minute long ago": {series("delaybridge_redis_full", func(m float64) float64 { return b2f(m >= 10 && m < 11) }, "instance", "a")}},
	},
	"DelaybridgeBrokerBlocked": {
		firing: map[string][]synthetic{"blocked for the last 20 minutes": {series("delaybridge_sink_blocked", stepAt(40, 0, 1), "instance", "a", "topic", "orders", "reason", "low on memory")}},
		quiet:  map[string][]synthetic{"a 30 s block long ago": {series("delaybridge_sink_blocked", func(m float64) float64 { return b2f(m >= 10 && m < 10.5) }, "instance", "a", "topic", "orders", "reason", "low on memory")}},
	},
	"DelaybridgeLeasesExpiring": {
		firing: map[string][]synthetic{"a reap every 5 minutes": {series("delaybridge_reaped_total", func(m float64) float64 { return math.Floor(m / 5) }, "instance", "a", "topic", "orders")}},
		quiet:  map[string][]synthetic{"reaps long ago": {series("delaybridge_reaped_total", constant(7), "instance", "a", "topic", "orders")}},
	},
}

func TestAlertsFireOnlyOnFailures(t *testing.T) {
	t.Parallel()
	content, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 10_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	defer eng.Close()
	cat := daemonMetrics(t)
	for _, g := range parseRules(t, content, rulesFile).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			sc, ok := alertScenarios[r.Alert]
			if !ok || len(sc.firing) == 0 || len(sc.quiet) == 0 {
				t.Errorf("%s: no firing and quiet scenarios in alertScenarios", r.Alert)
				continue
			}
			for name, ss := range sc.firing {
				checkSyntheticNames(t, cat, r.Alert, ss)
				if !fires(t, eng, r, ss) {
					t.Errorf("%s does not fire on %q", r.Alert, name)
				}
			}
			for name, ss := range sc.quiet {
				checkSyntheticNames(t, cat, r.Alert, ss)
				if fires(t, eng, r, ss) {
					t.Errorf("%s fires on %q, a healthy pipeline", r.Alert, name)
				}
			}
		}
	}
}

// checkSyntheticNames keeps the scenarios honest: their series are ones the
// daemon exports, with its labels.
func checkSyntheticNames(t *testing.T, cat catalog, alert string, ss []synthetic) {
	t.Helper()
	for _, s := range ss {
		l := labels.FromStrings(s.labels...)
		known, ok := cat[l.Get("__name__")]
		if !ok {
			t.Errorf("%s scenario: series %s is not exported by the daemon", alert, l.Get("__name__"))
			continue
		}
		l.Range(func(lb labels.Label) {
			if lb.Name != "__name__" && !known[lb.Name] && !slices.Contains(targetLabels, lb.Name) {
				t.Errorf("%s scenario: %s has no label %s", alert, l.Get("__name__"), lb.Name)
			}
		})
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
