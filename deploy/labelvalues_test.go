package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// labelValue is an equality matcher of a query: metric{label="value"}.
type labelValue struct{ metric, label, value string }

// queriedLabelValues is every metric{label="value"} the alert rules and the
// dashboard match on.
func queriedLabelValues(t *testing.T) []labelValue {
	t.Helper()
	var exprs []string
	content, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range parseRules(t, content, rulesFile).Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var walk func(ps []dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				exprs = append(exprs, grafanaBuiltins.Replace(tg.Expr))
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	var out []labelValue
	for _, e := range exprs {
		node, err := promqlParser.ParseExpr(e)
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				for _, m := range vs.LabelMatchers {
					if m.Type == labels.MatchEqual && m.Name != "__name__" {
						out = append(out, labelValue{vs.Name, m.Name, m.Value})
					}
				}
			}
			return nil
		})
	}
	return out
}

// checkServedLabelValues fails for a queried metric{label="value"} when the
// daemon serves that metric with that label, but never with that value (a
// dashboard filtering on state="in_flight" when the daemon says "inflight").
func checkServedLabelValues(t *testing.T, exposition []byte, queried []labelValue) {
	t.Helper()
	tp := expfmt.NewTextParser(model.UTF8Validation)
	families, err := tp.TextToMetricFamilies(bytes.NewReader(exposition))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	served := map[[2]string]map[string]bool{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				k := [2]string{name, l.GetName()}
				if served[k] == nil {
					served[k] = map[string]bool{}
				}
				served[k][l.GetValue()] = true
			}
		}
	}
	checked := 0
	for _, q := range queried {
		values, ok := served[[2]string{q.metric, q.label}]
		if !ok {
			continue // not served yet (no failure, no such topic): nothing to compare
		}
		checked++
		if !values[q.value] {
			t.Errorf("queries match %s{%s=%q}, but the daemon serves %s only with %s", q.metric, q.label, q.value, q.label, strings.Join(keys(values), ", "))
		}
	}
	if checked == 0 {
		t.Errorf("no queried label value could be compared with the daemon's /metrics (%d matchers)", len(queried))
	}
}
