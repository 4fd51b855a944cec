package deploy

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/delaybridge/delaybridge/forwarder"
)

// catalog maps every series name the daemon exports (histograms as
// _bucket/_sum/_count) to its label names.
type catalog map[string]map[string]bool

// targetLabels are attached by Prometheus to every scraped series: by the
// scrape itself (job, instance) or by the Prometheus Operator's
// ServiceMonitor (namespace, pod, ...).
var targetLabels = []string{"job", "instance", "namespace", "pod", "container", "service", "endpoint"}

// scrapeSeries are written by Prometheus for every target, not by the daemon.
var scrapeSeries = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"}

var (
	catalogOnce sync.Once
	catalogVal  catalog
	catalogErr  error
)

// daemonMetrics builds the registry the daemon serves on /metrics: the
// pipeline metrics of forwarder.NewMetrics plus the Go and process collectors.
func daemonMetrics(t *testing.T) catalog {
	t.Helper()
	catalogOnce.Do(func() { catalogVal, catalogErr = buildCatalog() })
	if catalogErr != nil {
		t.Fatalf("build the daemon's metric registry: %v", catalogErr)
	}
	return catalogVal
}

// recorder remembers what NewMetrics registers, so every vector can be given
// one child: a registry gathers nothing from a vector without children.
type recorder struct {
	prometheus.Registerer
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registerer.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func buildCatalog() (catalog, error) {
	reg := prometheus.NewRegistry()
	rec := &recorder{Registerer: reg}
	forwarder.NewMetrics(rec)
	if len(rec.collectors) == 0 {
		return nil, fmt.Errorf("forwarder.NewMetrics registered nothing")
	}
	for _, c := range rec.collectors {
		if err := touch(c); err != nil {
			return nil, err
		}
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	families, err := reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather: %w", err)
	}
	cat := catalog{}
	add := func(name string, labels map[string]bool, extra ...string) {
		set := map[string]bool{}
		for l := range labels {
			set[l] = true
		}
		for _, l := range extra {
			set[l] = true
		}
		cat[name] = set
	}
	for _, f := range families {
		labels := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		name := f.GetName()
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			add(name+"_bucket", labels, "le")
			add(name+"_sum", labels)
			add(name+"_count", labels)
			add(name, labels) // native histograms
		case dto.MetricType_SUMMARY:
			add(name, labels, "quantile")
			add(name+"_sum", labels)
			add(name+"_count", labels)
		default:
			add(name, labels)
		}
	}
	for _, s := range scrapeSeries {
		add(s, nil)
	}
	return cat, nil
}

// touch creates one child of a vector (with the right number of label
// values, found by trying), so that gathering shows it with its labels.
func touch(c prometheus.Collector) error {
	m := reflect.ValueOf(c).MethodByName("GetMetricWithLabelValues")
	if !m.IsValid() {
		return nil // a plain metric: always gathered
	}
	for n := 0; n <= 8; n++ {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = "x"
		}
		out := m.CallSlice([]reflect.Value{reflect.ValueOf(vals)})
		if out[1].IsNil() {
			return nil
		}
	}
	return fmt.Errorf("%T: no label count from 0 to 8 fits", c)
}

var promqlParser = parser.NewParser(parser.Options{})

// checkPromQL parses expr and returns a problem for every selector of a
// series the daemon does not export, and every label it matches or groups by
// that no selected series has.
func checkPromQL(cat catalog, expr string) []string {
	node, err := promqlParser.ParseExpr(expr)
	if err != nil {
		return []string{fmt.Sprintf("does not parse: %v", err)}
	}
	var problems []string
	parser.Inspect(node, func(n parser.Node, path []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			problems = append(problems, checkSelector(cat, n)...)
		case *parser.AggregateExpr:
			labels := labelsUnder(cat, n.Expr)
			for _, g := range n.Grouping {
				if !labels[g] {
					problems = append(problems, fmt.Sprintf("%s by/without label %q: no selected series has it (has %s)", n.Op, g, strings.Join(keys(labels), ", ")))
				}
			}
		}
		return nil
	})
	return problems
}

func checkSelector(cat catalog, vs *parser.VectorSelector) []string {
	name := vs.Name
	if name == "" {
		for _, m := range vs.LabelMatchers {
			if m.Name == "__name__" {
				name = m.Value
			}
		}
	}
	labels, ok := cat[name]
	if !ok {
		return []string{fmt.Sprintf("metric %q is not exported by the daemon", name)}
	}
	var problems []string
	for _, m := range vs.LabelMatchers {
		if m.Name == "__name__" || labels[m.Name] || slices.Contains(targetLabels, m.Name) {
			continue
		}
		problems = append(problems, fmt.Sprintf("%s: label %q does not exist (labels: %s)", name, m.Name, strings.Join(keys(labels), ", ")))
	}
	return problems
}

// labelsUnder is every label of every series selected under n, plus the
// target labels; label_replace and the like may add more, which we do not use.
func labelsUnder(cat catalog, n parser.Node) map[string]bool {
	out := map[string]bool{}
	for _, l := range targetLabels {
		out[l] = true
	}
	parser.Inspect(n, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			for l := range cat[vs.Name] {
				out[l] = true
			}
		}
		return nil
	})
	return out
}

func TestDaemonMetricsCatalog(t *testing.T) {
	cat := daemonMetrics(t)
	// The catalog must hold what it is meant to, or every later check passes
	// vacuously.
	for name, labels := range map[string][]string{
		"delaybridge_published_total":         {"topic"},
		"delaybridge_lateness_seconds_bucket": {"topic", "le"},
		"delaybridge_backlog_messages":        {"topic", "state"},
		"delaybridge_publish_failures_total":  {"topic", "outcome"},
		"go_goroutines":                       nil,
		"process_resident_memory_bytes":       nil,
	} {
		got, ok := cat[name]
		if !ok {
			t.Errorf("catalog lacks %s", name)
			continue
		}
		for _, l := range labels {
			if !got[l] {
				t.Errorf("catalog: %s lacks label %s (has %v)", name, l, keys(got))
			}
		}
	}
	if probs := checkPromQL(cat, `sum by (topic) (rate(delaybridge_nonexistent_total[5m]))`); len(probs) == 0 {
		t.Error("checkPromQL accepted a metric the daemon does not export")
	}
	if probs := checkPromQL(cat, `sum by (slot) (delaybridge_backlog_messages{phase="x"})`); len(probs) != 2 {
		t.Errorf("checkPromQL: want 2 problems (unknown matcher label, unknown grouping label), got %q", probs)
	}
}
