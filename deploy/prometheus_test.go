package deploy

import (
	"bytes"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite generated files (the PrometheusRule) from their sources")

var (
	rulesFile          = filepath.Join("prometheus", "rules.yaml")
	prometheusRuleFile = filepath.Join(kubernetesDir, "components", "prometheus-operator", "prometheusrule.yaml")
)

// requiredAlerts are the conditions operators must be told about.
var requiredAlerts = []string{
	"DelaybridgeNoLiveReplica",         // no live replica
	"DelaybridgeOverdueBacklogGrowing", // overdue backlog growing
	"DelaybridgeLatenessHigh",          // lateness p99 over a bound
	"DelaybridgeDeadSetGrowing",        // dead set growing
	"DelaybridgePublishFailing",        // publish failures
}

func parseRules(t *testing.T, content []byte, where string) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.Parse(content, false, model.UTF8Validation, promqlParser, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("%s: %v", where, err)
	}
	if groups == nil || len(groups.Groups) == 0 {
		t.Fatalf("%s: no rule groups", where)
	}
	return groups
}

// TestAlertRules parses the rules with Prometheus's own rule parser (which
// also checks the annotation templates) and checks that every metric and
// label they use is one the daemon exports, and that every alert has a
// severity, a summary and a runbook documented in deploy/README.md.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	content, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	cat := daemonMetrics(t)
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatalf("deploy/README.md documents the runbooks: %v", err)
	}
	var alerts []string
	for _, g := range parseRules(t, content, rulesFile).Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			alerts = append(alerts, r.Alert)
			for _, p := range checkPromQL(cat, r.Expr) {
				t.Errorf("%s: %s\n%s", name, p, r.Expr)
			}
			if r.Alert == "" {
				continue
			}
			if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
				t.Errorf("%s: severity label %q: want critical, warning or info", name, r.Labels["severity"])
			}
			for _, a := range []string{"summary", "runbook"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: no %s annotation", name, a)
				}
			}
			if strings.Contains(r.Annotations["runbook"], "\n") {
				t.Errorf("%s: the runbook annotation must be one line", name)
			}
			if r.For == 0 {
				t.Errorf("%s: no for: duration, so one bad scrape pages someone", name)
			}
			if !regexp.MustCompile(`(?m)^#+ ` + regexp.QuoteMeta(r.Alert) + `\s*$`).Match(readme) {
				t.Errorf("%s: deploy/README.md has no section titled %s (its runbook)", name, r.Alert)
			}
		}
	}
	for _, want := range requiredAlerts {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s", want)
		}
	}
}

// prometheusRuleYAML wraps rules.yaml's groups, text and comments kept, in a
// PrometheusRule for the Prometheus Operator.
func prometheusRuleYAML(rules []byte) ([]byte, error) {
	i := bytes.Index(rules, []byte("\ngroups:\n"))
	if i < 0 {
		return nil, fmt.Errorf("%s: no top-level groups: line", rulesFile)
	}
	var b bytes.Buffer
	b.WriteString(`# GENERATED from deploy/prometheus/rules.yaml: edit that file, then run
#   cd deploy && go test -run TestPrometheusRule -update
# The alerts' runbooks are in deploy/README.md.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: delaybridge
  labels:
    app.kubernetes.io/name: delaybridge
    app.kubernetes.io/instance: delaybridge
spec:
`)
	for _, line := range strings.SplitAfter(string(rules[i+1:]), "\n") {
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	return b.Bytes(), nil
}

// TestPrometheusRuleMatchesRulesFile keeps the operator's PrometheusRule
// equal to rules.yaml, and checks it decodes into the operator's type with
// the same rules.
func TestPrometheusRuleMatchesRulesFile(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	want, err := prometheusRuleYAML(rules)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(prometheusRuleFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(prometheusRuleFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run `go test -run TestPrometheusRule -update` in deploy/", prometheusRuleFile)
	}
	obj, err := decodeStrict(got)
	if err != nil {
		t.Fatal(err)
	}
	pr, ok := obj.typed.(*monitoringv1.PrometheusRule)
	if !ok {
		t.Fatalf("%s is a %s, not a PrometheusRule", prometheusRuleFile, obj.kind)
	}
	groups := parseRules(t, rules, rulesFile)
	if len(pr.Spec.Groups) != len(groups.Groups) {
		t.Fatalf("PrometheusRule has %d groups, rules.yaml %d", len(pr.Spec.Groups), len(groups.Groups))
	}
	for i, g := range groups.Groups {
		pg := pr.Spec.Groups[i]
		if pg.Name != g.Name || len(pg.Rules) != len(g.Rules) {
			t.Fatalf("group %d: PrometheusRule %s with %d rules, rules.yaml %s with %d", i, pg.Name, len(pg.Rules), g.Name, len(g.Rules))
		}
		for j, r := range g.Rules {
			pr := pg.Rules[j]
			if pr.Alert != r.Alert || pr.Expr.String() != r.Expr || pr.Annotations["runbook"] != r.Annotations["runbook"] {
				t.Errorf("rule %s differs in the PrometheusRule", r.Alert)
			}
		}
	}
}

// prometheusConfig is the part of Prometheus's configuration the local stack
// uses; unknown fields fail, so a misspelt key does not pass silently.
type prometheusConfig struct {
	Global struct {
		ScrapeInterval     string `json:"scrape_interval"`
		EvaluationInterval string `json:"evaluation_interval"`
	} `json:"global"`
	RuleFiles     []string `json:"rule_files"`
	ScrapeConfigs []struct {
		JobName      string `json:"job_name"`
		MetricsPath  string `json:"metrics_path,omitempty"`
		DNSSDConfigs []struct {
			Names           []string `json:"names"`
			Type            string   `json:"type"`
			Port            int      `json:"port"`
			RefreshInterval string   `json:"refresh_interval,omitempty"`
		} `json:"dns_sd_configs,omitempty"`
		StaticConfigs []struct {
			Targets []string `json:"targets"`
		} `json:"static_configs,omitempty"`
		RelabelConfigs []relabelConfig `json:"relabel_configs,omitempty"`
	} `json:"scrape_configs"`
}

type relabelConfig struct {
	SourceLabels []string `json:"source_labels,omitempty"`
	Regex        string   `json:"regex,omitempty"`
	TargetLabel  string   `json:"target_label,omitempty"`
	Replacement  string   `json:"replacement,omitempty"`
}

func readPrometheusConfig(t *testing.T) prometheusConfig {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("prometheus", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c prometheusConfig
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		t.Fatalf("prometheus/prometheus.yml: %v", err)
	}
	return c
}

func TestPrometheusConfig(t *testing.T) {
	t.Parallel()
	c := readPrometheusConfig(t)
	for _, d := range []string{c.Global.ScrapeInterval, c.Global.EvaluationInterval} {
		if _, err := model.ParseDuration(d); err != nil {
			t.Errorf("global interval %q: %v", d, err)
		}
	}
	if len(c.RuleFiles) == 0 {
		t.Errorf("no rule_files: the alerts would not load")
	}
	found := false
	for _, sc := range c.ScrapeConfigs {
		if sc.MetricsPath != "" && sc.MetricsPath != "/metrics" {
			t.Errorf("job %s: metrics_path %q, the daemon serves /metrics", sc.JobName, sc.MetricsPath)
		}
		for _, l := range []string{"pod", "namespace"} {
			if !slices.ContainsFunc(sc.RelabelConfigs, func(r relabelConfig) bool {
				return r.TargetLabel == l
			}) {
				t.Errorf("job %s: no relabelling sets %s, which the dashboard's legends and variables use", sc.JobName, l)
			}
		}
		for _, sd := range sc.DNSSDConfigs {
			found = found || slices.Contains(sd.Names, "delaybridge")
			if sd.Port != 8080 {
				t.Errorf("job %s: port %d, the daemon listens on 8080 in the compose stack", sc.JobName, sd.Port)
			}
		}
	}
	if !found {
		t.Errorf("no scrape job discovers the delaybridge replicas by DNS")
	}
}
