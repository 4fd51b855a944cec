package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var dashboardFile = filepath.Join("grafana", "delaybridge.json")

type dashboardPanel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource *datasourceRef           `json:"datasource"`
	GridPos    struct{ X, Y, W, H int } `json:"gridPos"`
	Targets    []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
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
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
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
			m := regexp.MustCompile(`^label_values\((\w+),\s*(\w+)\)$`).FindStringSubmatch(q.Query)
			if m == nil {
				t.Errorf("variable %s: query %q: want label_values(metric, label)", v.Name, q.Query)
				continue
			}
			if labels, ok := cat[m[1]]; !ok {
				t.Errorf("variable %s: metric %s is not exported by the daemon", v.Name, m[1])
			} else if !labels[m[2]] && !slices.Contains(targetLabels, m[2]) {
				t.Errorf("variable %s: metric %s has no label %s", v.Name, m[1], m[2])
			}
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
		"owned slots per replica": "sum by (instance) (delaybridge_owned_slots",
	} {
		if !strings.Contains(joined, needle) {
			t.Errorf("no panel shows %s (no query contains %q)", what, needle)
		}
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		t.Errorf("%s: end the file with a newline", dashboardFile)
	}
}
