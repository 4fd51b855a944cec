package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

var dashboardFile = filepath.Join("grafana", "delaybridge.json")

type dashboardPanel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource *datasourceRef           `json:"datasource"`
	GridPos    struct{ X, Y, W, H int } `json:"gridPos"`
	Targets    []struct {
		RefID        string         `json:"refId"`
		Expr         string         `json:"expr"`
		LegendFormat string         `json:"legendFormat"`
		Datasource   *datasourceRef `json:"datasource"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"` // a row's panels
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashboard struct {
	UID           string           `json:"uid"`
	Title         string           `json:"title"`
	SchemaVersion int              `json:"schemaVersion"`
	Panels        []dashboardPanel `json:"panels"`
	Templating    struct {
		List []dashboardVar `json:"list"`
	} `json:"templating"`
}

type dashboardVar struct {
	Name  string          `json:"name"`
	Type  string          `json:"type"`
	Query json.RawMessage `json:"query"`
}

// grafanaBuiltins are replaced by Grafana before the query reaches Prometheus.
var grafanaBuiltins = strings.NewReplacer("$__rate_interval", "5m", "${__rate_interval}", "5m", "$__interval", "1m", "${__interval}", "1m", "$__range", "1h", "${__range}", "1h")

var grafanaVar = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

// TestDashboard parses the dashboard and checks every query: it is PromQL,
// uses only metrics and labels the daemon exports, and only variables the
// dashboard defines; and the panels cover what operators look at.
func TestDashboard(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 {
		t.Errorf("dashboard needs a uid, a title and a schemaVersion")
	}
	cat := daemonMetrics(t)

	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		switch v.Type {
		case "datasource":
			if string(v.Query) != `"prometheus"` {
				t.Errorf("variable %s: want a prometheus datasource, got %s", v.Name, v.Query)
			}
		case "query":
			var q struct{ Query string }
			if err := json.Unmarshal(v.Query, &q); err != nil {
				t.Errorf("variable %s: query %s: %v", v.Name, v.Query, err)
				continue
			}
			m := regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`).FindStringSubmatch(q.Query)
			if m == nil {
				t.Errorf("variable %s: query %q: want label_values(selector, label)", v.Name, q.Query)
				continue
			}
			for _, prob := range checkPromQL(cat, m[1]) {
				t.Errorf("variable %s: %s", v.Name, prob)
			}
			vs, err := parseSelector(m[1])
			if err != nil {
				t.Errorf("variable %s: %v", v.Name, err)
				continue
			}
			if labels := cat[vs.Name]; !labels[m[2]] && !slices.Contains(targetLabels, m[2]) {
				t.Errorf("variable %s: metric %s has no label %s", v.Name, vs.Name, m[2])
			}
			// Each variable narrows the ones after it: job, namespace, topic.
			want := map[string][]string{"namespace": {"job"}, "topic": {"job", "namespace"}}[v.Name]
			for _, prob := range missingScope(vs, want...) {
				t.Errorf("variable %s: %s", v.Name, prob)
			}
			// The topic picker must list a topic from the first scrape, not
			// from its first claim: its series exists at 0 in a fresh daemon.
			if v.Name == "topic" && !freshDaemon(t).hasTopic(vs.Name) {
				t.Errorf("variable topic: %s has no series of a topic in a fresh daemon; use one that exists at start (forwarder's freshSeries)", vs.Name)
			}
		}
	}
	for _, name := range []string{"datasource", "job", "namespace", "topic"} {
		if !slices.ContainsFunc(d.Templating.List, func(v dashboardVar) bool { return v.Name == name }) {
			t.Errorf("no %s variable", name)
		}
	}
	if !vars["datasource"] {
		t.Errorf("no datasource variable: the dashboard would be tied to one Grafana's data source uid")
	}

	ids := map[int]bool{}
	var all []string
	var walk func(ps []dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
			}
			ids[p.ID] = true
			if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
				t.Errorf("panel %q: gridPos %+v out of the 24-column grid", p.Title, p.GridPos)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: datasource must be ${datasource}", p.Title)
			}
			for _, tg := range p.Targets {
				if tg.Datasource != nil && tg.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q query %s: datasource must be ${datasource}", p.Title, tg.RefID)
				}
				expr := grafanaBuiltins.Replace(tg.Expr)
				for _, m := range grafanaVar.FindAllStringSubmatch(expr, -1) {
					if !vars[m[1]] {
						t.Errorf("panel %q: query uses $%s, which the dashboard does not define", p.Title, m[1])
					}
				}
				for _, prob := range checkPromQL(cat, expr) {
					t.Errorf("panel %q query %s: %s\n%s", p.Title, tg.RefID, prob, tg.Expr)
				}
				for _, prob := range checkScoped(expr) {
					t.Errorf("panel %q query %s: %s\n%s", p.Title, tg.RefID, prob, tg.Expr)
				}
				if instanceLegend.MatchString(tg.LegendFormat) {
					t.Errorf("panel %q query %s: legend %q names the instance (an address); use {{pod}}", p.Title, tg.RefID, tg.LegendFormat)
				}
				all = append(all, tg.Expr)
			}
		}
	}
	walk(d.Panels)

	joined := strings.Join(all, "\n")
	for what, needle := range map[string]string{
		"throughput by topic":     "sum by (topic) (rate(delaybridge_published_total",
		"lateness p50":            "histogram_quantile(0.5, sum by (topic, le) (rate(delaybridge_lateness_seconds_bucket",
		"lateness p99":            "histogram_quantile(0.99, sum by (topic, le) (rate(delaybridge_lateness_seconds_bucket",
		"overdue backlog":         `state="overdue"`,
		"in flight":               `state="inflight"`,
		"dead":                    `state="dead"`,
		"retries":                 "delaybridge_retried_total",
		"owned slots per replica": "sum by (pod) (delaybridge_owned_slots",
		"oldest overdue age":      "max by (topic) (delaybridge_oldest_overdue_seconds",
		"waiting to retry":        `state="retrying"`,
	} {
		if !strings.Contains(joined, needle) {
			t.Errorf("no panel shows %s (no query contains %q)", what, needle)
		}
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		t.Errorf("%s: end the file with a newline", dashboardFile)
	}
}

var instanceLegend = regexp.MustCompile(`\{\{\s*instance\s*\}\}`)

// parseSelector parses a variable's series selector.
func parseSelector(expr string) (*parser.VectorSelector, error) {
	node, err := promqlParser.ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", expr, err)
	}
	vs, ok := node.(*parser.VectorSelector)
	if !ok {
		return nil, fmt.Errorf("%s: want a series selector", expr)
	}
	return vs, nil
}

// missingScope returns a problem for each of the variables vars that vs
// does not match its label on: var=~"$var".
func missingScope(vs *parser.VectorSelector, vars ...string) []string {
	var problems []string
	for _, v := range vars {
		if !slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool {
			return m.Name == v && m.Type == labels.MatchRegexp && m.Value == "$"+v
		}) {
			problems = append(problems, fmt.Sprintf("%s: no %s=~\"$%s\" matcher: the dashboard would mix jobs and namespaces", vs.String(), v, v))
		}
	}
	return problems
}

// checkScoped returns a problem for every series selector of expr that the
// job and namespace variables do not narrow, and every aggregation by
// instance (an address, not a replica's name).
func checkScoped(expr string) []string {
	node, err := promqlParser.ParseExpr(expr)
	if err != nil {
		return nil // checkPromQL reports it
	}
	var problems []string
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			problems = append(problems, missingScope(n, "job", "namespace")...)
		case *parser.AggregateExpr:
			if slices.Contains(n.Grouping, "instance") {
				problems = append(problems, fmt.Sprintf("%s by instance: group by pod", n.Op))
			}
		}
		return nil
	})
	return problems
}
