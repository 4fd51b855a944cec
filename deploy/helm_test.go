package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The Helm chart is rendered here with Helm's own Go packages (the loader,
// the values and schema code, the template engine), as `helm template`
// would, and the objects go through the checks the kustomize base passes.
var (
	chartDir             = filepath.Join("helm", "delaybridge")
	productionValuesFile = filepath.Join(chartDir, "ci", "production-values.yaml")
	typoValuesFile       = filepath.Join("testdata", "helm", "typo-values.yaml")
)

const releaseName, releaseNamespace = "delaybridge", "delaybridge"

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load the chart %s: %v", chartDir, err)
	}
	return c
}

func readValues(t *testing.T, file string) map[string]any {
	t.Helper()
	if file == "" {
		return map[string]any{}
	}
	v, err := chartutil.ReadValuesFile(file)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	return v.AsMap()
}

// renderValues turns user values into the chart's render values, checking
// them against values.schema.json as helm install does (unless skipSchema).
func renderValues(c *chart.Chart, vals map[string]any, skipSchema bool) (chartutil.Values, error) {
	opts := chartutil.ReleaseOptions{Name: releaseName, Namespace: releaseNamespace, Revision: 1, IsInstall: true}
	return chartutil.ToRenderValuesWithSchemaValidation(c, vals, opts, chartutil.DefaultCapabilities, skipSchema)
}

// renderChart renders the chart with vals into strictly decoded objects, and
// returns NOTES.txt apart. Strict: a template reading a value that does not
// exist fails.
func renderChart(t *testing.T, name string, vals map[string]any, skipSchema bool) (rendering, string) {
	t.Helper()
	c := loadChart(t)
	rv, err := renderValues(c, vals, skipSchema)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	out, err := engine.Engine{Strict: true}.Render(c, rv)
	if err != nil {
		t.Fatalf("%s: render: %v", name, err)
	}
	r := rendering{name: "helm/" + name}
	var notes string
	for _, file := range slices.Sorted(maps.Keys(out)) {
		if strings.HasSuffix(file, "NOTES.txt") {
			notes = out[file]
			continue
		}
		for _, doc := range strings.Split(out[file], "\n---") {
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("%s: %s: %v\n%s", name, file, err, doc)
			}
			if string(bytes.TrimSpace(j)) == "null" {
				continue // a template switched off, or only comments
			}
			obj, err := decodeStrict([]byte(doc))
			if err != nil {
				t.Errorf("%s: %s: %v", name, file, err)
				continue
			}
			r.objects = append(r.objects, obj)
		}
	}
	return r, notes
}

func kindCounts(r rendering) map[string]int {
	kinds := map[string]int{}
	for _, o := range r.objects {
		kinds[o.kind]++
	}
	return kinds
}

// TestHelmChartRenders renders the default values and a production-like
// values file, and checks them as the kustomize renderings are checked.
func TestHelmChartRenders(t *testing.T) {
	// Not parallel: checkDeployment loads the daemon's configuration, which
	// sets the process environment.
	uid := dockerfileUID(t)
	c := loadChart(t)
	for _, tc := range []struct {
		name, file string
		replicas   int32
		kinds      map[string]int
		// existing is the Secret the user created beside the chart.
		existing *corev1.Secret
	}{
		{
			name: "default", replicas: 3,
			kinds: map[string]int{"Deployment": 1, "Service": 1, "PodDisruptionBudget": 1, "ServiceAccount": 1, "ConfigMap": 2, "Secret": 1},
		},
		{
			name: "production", file: productionValuesFile, replicas: 4,
			kinds: map[string]int{"Deployment": 1, "Service": 1, "PodDisruptionBudget": 1, "ServiceAccount": 1, "ConfigMap": 2, "ServiceMonitor": 1, "PrometheusRule": 1},
			existing: &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "delaybridge-credentials", Namespace: releaseNamespace},
				StringData: map[string]string{
					"redis-url":           "rediss://redis-cluster:6379/0",
					"redis-password":      "s3cret",
					"amqp-url":            "amqps://delaybridge:s3cret@rabbitmq.rabbitmq:5671/",
					"kafka-sasl-password": "s3cret",
				},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, notes := renderChart(t, tc.name, readValues(t, tc.file), false)
			if got := kindCounts(r); !maps.Equal(got, tc.kinds) {
				t.Errorf("rendered kinds %v, want %v", got, tc.kinds)
			}
			if tc.existing != nil {
				r.objects = append(r.objects, object{apiVersion: "v1", kind: "Secret", name: tc.existing.Name, typed: tc.existing})
			}
			d := only[*appsv1.Deployment](t, r)
			checkDeployment(t, r, d, uid, tc.replicas)
			checkDashboardConfigMap(t, r)
			for _, pr := range every[*monitoringv1.PrometheusRule](r) {
				checkChartPrometheusRule(t, pr)
			}
			if want := "ghcr.io/delaybridge/delaybridge:" + c.Metadata.AppVersion; d.Spec.Template.Spec.Containers[0].Image != want {
				t.Errorf("image %s, want %s (the chart's appVersion)", d.Spec.Template.Spec.Containers[0].Image, want)
			}
			if !strings.Contains(notes, "rollout status deployment/"+d.Name) {
				t.Errorf("NOTES.txt does not name the Deployment %s:\n%s", d.Name, notes)
			}
			if example := strings.Contains(notes, "EXAMPLE credentials"); example != (tc.existing == nil) {
				t.Errorf("NOTES.txt warns of the example credentials: %v, want %v:\n%s", example, tc.existing == nil, notes)
			}
		})
	}
}

// checkChartPrometheusRule: the chart's PrometheusRule carries the groups
// and rules of deploy/prometheus/rules.yaml.
func checkChartPrometheusRule(t *testing.T, pr *monitoringv1.PrometheusRule) {
	t.Helper()
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	groups := parseRules(t, rules, rulesFile)
	if len(pr.Spec.Groups) != len(groups.Groups) {
		t.Fatalf("PrometheusRule %s has %d groups, %s %d", pr.Name, len(pr.Spec.Groups), rulesFile, len(groups.Groups))
	}
	for i, g := range groups.Groups {
		pg := pr.Spec.Groups[i]
		if pg.Name != g.Name || len(pg.Rules) != len(g.Rules) {
			t.Fatalf("group %d: PrometheusRule %s with %d rules, %s %s with %d", i, pg.Name, len(pg.Rules), rulesFile, g.Name, len(g.Rules))
		}
		for j, r := range g.Rules {
			got := pg.Rules[j]
			if got.Alert != r.Alert || got.Record != r.Record || got.Expr.String() != r.Expr || !maps.Equal(got.Labels, r.Labels) || !maps.Equal(got.Annotations, r.Annotations) {
				t.Errorf("rule %s%s differs in the chart's PrometheusRule", r.Alert, r.Record)
			}
		}
	}
}

// TestHelmChartMatchesKustomizeBase: with its default values the chart
// deploys what the kustomize base deploys: the same settings, and the same
// pod apart from names, labels and the checksums that roll it.
func TestHelmChartMatchesKustomizeBase(t *testing.T) {
	t.Parallel()
	chartR, _ := renderChart(t, "default", nil, false)
	base := render(t, filepath.Join(kubernetesDir, "base"))
	settings := func(r rendering, d *appsv1.Deployment) map[string]string {
		name := d.Spec.Template.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name
		for _, cm := range every[*corev1.ConfigMap](r) {
			if cm.Name == name {
				return cm.Data
			}
		}
		t.Fatalf("%s: no ConfigMap %s", r.name, name)
		return nil
	}
	cd, bd := only[*appsv1.Deployment](t, chartR), only[*appsv1.Deployment](t, base)
	chartSettings := settings(chartR, cd)
	for name, want := range settings(base, bd) {
		if got, ok := chartSettings[name]; !ok || got != want {
			t.Errorf("the kustomize base sets %s=%s, the chart's default values %q (set: %v)", name, want, got, ok)
		}
	}
	for name, got := range chartSettings {
		if _, inBase := settings(base, bd)[name]; !inBase && knownVariables(t).defaults[strings.TrimPrefix(name, "DELAYBRIDGE_")] != got {
			t.Errorf("the chart's default values set %s=%s, which is neither in the kustomize base nor the daemon's default", name, got)
		}
	}
	cs, bs := cd.Spec.Template.Spec, bd.Spec.Template.Spec
	cc, bc := cs.Containers[0], bs.Containers[0]
	byName := func(a, b corev1.EnvVar) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(cc.Env, byName)
	slices.SortFunc(bc.Env, byName)
	for _, f := range []struct {
		what        string
		chart, base any
	}{
		{"strategy", cd.Spec.Strategy, bd.Spec.Strategy},
		{"replicas", cd.Spec.Replicas, bd.Spec.Replicas},
		{"pod securityContext", cs.SecurityContext, bs.SecurityContext},
		{"terminationGracePeriodSeconds", cs.TerminationGracePeriodSeconds, bs.TerminationGracePeriodSeconds},
		{"automountServiceAccountToken", cs.AutomountServiceAccountToken, bs.AutomountServiceAccountToken},
		{"container securityContext", cc.SecurityContext, bc.SecurityContext},
		{"resources", cc.Resources, bc.Resources},
		{"ports", cc.Ports, bc.Ports},
		{"args", cc.Args, bc.Args},
		{"livenessProbe", cc.LivenessProbe, bc.LivenessProbe},
		{"readinessProbe", cc.ReadinessProbe, bc.ReadinessProbe},
		{"volumeMounts", cc.VolumeMounts, bc.VolumeMounts},
		{"env", cc.Env, bc.Env},
		{"image", cc.Image, bc.Image},
		{"PodDisruptionBudget maxUnavailable", only[*policyv1.PodDisruptionBudget](t, chartR).Spec.MaxUnavailable, only[*policyv1.PodDisruptionBudget](t, base).Spec.MaxUnavailable},
	} {
		if !equality.Semantic.DeepEqual(f.chart, f.base) {
			c, _ := json.Marshal(f.chart)
			b, _ := json.Marshal(f.base)
			t.Errorf("%s differs:\nchart: %s\nbase:  %s", f.what, c, b)
		}
	}
	topologyKeys := func(s corev1.PodSpec) (keys []string) {
		for _, c := range s.TopologySpreadConstraints {
			keys = append(keys, c.TopologyKey+"/"+string(c.WhenUnsatisfiable))
		}
		return keys
	}
	if !slices.Equal(topologyKeys(cs), topologyKeys(bs)) {
		t.Errorf("topology spread: chart %v, base %v", topologyKeys(cs), topologyKeys(bs))
	}
}

// TestHelmGoMemLimitIsNinetyPercentOfTheLimit for every unit the chart reads.
func TestHelmGoMemLimitIsNinetyPercentOfTheLimit(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	for _, mem := range []string{"512Mi", "1Gi", "768Mi", "3Gi", "1G", "700M", "1000000k", "536870913", "1Ti"} {
		rv, err := renderValues(c, map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": mem}}}, false)
		if err != nil {
			t.Fatalf("memory %s: %v", mem, err)
		}
		out, err := engine.Engine{Strict: true}.Render(c, rv)
		if err != nil {
			t.Fatalf("memory %s: %v", mem, err)
		}
		obj, err := decodeStrict([]byte(out["delaybridge/templates/deployment.yaml"]))
		if err != nil {
			t.Fatalf("memory %s: %v", mem, err)
		}
		ctr := obj.typed.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
		if q := ctr.Resources.Limits[corev1.ResourceMemory]; q.Cmp(resource.MustParse(mem)) != 0 {
			t.Errorf("memory %s: the limit rendered is %s", mem, q.String())
		}
		env := map[string]string{}
		for _, e := range ctr.Env {
			env[e.Name] = e.Value
		}
		checkGoMemLimit(t, ctr, env)
	}
	for _, bad := range []string{"1.5Gi", "512MB", "0512Mi", "lots", ""} {
		if _, err := renderValues(c, map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": bad}}}, false); err == nil {
			t.Errorf("memory %q: the schema accepted it; GOMEMLIMIT cannot be computed from it", bad)
		}
	}
}

// TestHelmSchemaRefusesTypos: values.schema.json makes a misspelt or
// misplaced setting fail the install instead of being ignored.
func TestHelmSchemaRefusesTypos(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	if _, err := renderValues(c, readValues(t, typoValuesFile), false); err == nil {
		t.Errorf("%s: the schema accepted it", typoValuesFile)
	} else if !strings.Contains(err.Error(), "batchSise") {
		t.Errorf("%s: refused, but the error does not name the typo batchSise: %v", typoValuesFile, err)
	}
	for name, vals := range map[string]string{
		"top-level typo":       "replicaCont: 3",
		"config typo":          "config: {batchSise: 100}",
		"config as variable":   "config: {DELAYBRIDGE_BATCH_SIZE: 100}",
		"topic field typo":     "topics: [{name: orders, routingkey: x}]",
		"topic without name":   "topics: [{sink: amqp}]",
		"no topic":             "topics: []",
		"image typo":           "image: {tagg: v1}",
		"limits typo":          "resources: {limits: {memroy: 1Gi}}",
		"wrong type":           "config: {batchSize: lots}",
		"out of range":         "config: {batchSize: 0}",
		"unknown sink":         "topics: [{name: orders, sink: sqs}]",
		"slots not power of 2": "topics: [{name: orders, slots: 3}]",
		"bad duration":         "config: {lease: 30 seconds}",
		"bad log level":        "config: {logLevel: verbose}",
		"secret in config":     "config: {amqpUrl: 'amqp://x'}",
		"secretKeys typo":      "secretKeys: {redisURL: redis-url}",
		"serviceMonitor typo":  "metrics: {serviceMonitor: {enable: true}}",
		"dashboard typo":       "grafanaDashboard: {label: {a: b}}",
		"probe typo":           "livenessProbe: {period: 5}",
		"pdb typo":             "podDisruptionBudget: {minAvailable: 1}",
		"http port missing":    "config: {httpAddr: localhost}",
	} {
		v, err := chartutil.ReadValues([]byte(vals))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := renderValues(c, v.AsMap(), false); err == nil {
			t.Errorf("%s: the schema accepted %s", name, vals)
		}
	}
}

// envName is the variable a camelCase values key sets: batchSize is
// BATCH_SIZE (the chart's delaybridge.varName).
func envName(key string) string {
	var b strings.Builder
	for i, r := range key {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

type schemaNode struct {
	Properties map[string]schemaNode `json:"properties"`
	Items      *schemaNode           `json:"items"`
}

func readSchema(t *testing.T) schemaNode {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s schemaNode
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	return s
}

// TestHelmValuesSetEveryVariable: every DELAYBRIDGE_* variable the daemon
// reads (the config package's struct tags) can be set from values, under
// the name the chart renders: config.<camelCase> for the global settings,
// topics[].<camelCase> for a topic's, secretKeys.<camelCase> for the
// secrets (through their _FILE form); DELAYBRIDGE_TOPICS comes from the
// topics and DELAYBRIDGE_REPLICA_ID from the pod's name.
func TestHelmValuesSetEveryVariable(t *testing.T) {
	t.Parallel()
	vars := knownVariables(t)
	schema := readSchema(t)
	names := func(props map[string]schemaNode, skip ...string) map[string]string {
		out := map[string]string{}
		for k := range props {
			if !slices.Contains(skip, k) {
				out[envName(k)] = k
			}
		}
		return out
	}
	config := names(schema.Properties["config"].Properties)
	secrets := names(schema.Properties["secretKeys"].Properties)
	if got := names(schema.Properties["secrets"].Properties); !maps.Equal(got, secrets) {
		t.Errorf("secrets %v and secretKeys %v name different credentials", keys(got), keys(secrets))
	}
	topic := names(schema.Properties["topics"].Items.Properties, "name")
	for name := range vars.global {
		switch {
		case name == "TOPICS" || name == "REPLICA_ID":
		case vars.secret[name]:
			if _, ok := secrets[name]; !ok {
				t.Errorf("secret %s: no secretKeys/secrets key for it in values.schema.json", name)
			}
		default:
			if _, ok := config[name]; !ok {
				t.Errorf("%s: no config key for it in values.schema.json (want config.%s)", name, camel(name))
			}
		}
	}
	for name, key := range config {
		if !vars.global[name] || vars.secret[name] {
			t.Errorf("config.%s sets %s_%s, which is not a non-secret setting of the daemon", key, "DELAYBRIDGE", name)
		}
	}
	for name, key := range secrets {
		if !vars.secret[name] {
			t.Errorf("secretKeys.%s: %s is not a secret of the daemon", key, name)
		}
	}
	for name := range vars.topic {
		if _, ok := topic[name]; !ok {
			t.Errorf("topic variable %s: no topics[] key for it in values.schema.json (want %s)", name, camel(name))
		}
	}
	for name, key := range topic {
		if !vars.topic[name] {
			t.Errorf("topics[].%s sets DELAYBRIDGE_TOPIC_<NAME>_%s, which the daemon does not read", key, name)
		}
	}

	// The chart renders each key under that name: set every one.
	cfg, tp, sk, sv := map[string]any{}, map[string]any{"name": "order-events.v2"}, map[string]any{}, map[string]any{}
	valueOf := func(key string) string {
		if key == "httpAddr" {
			return ":9090" // the chart reads its port
		}
		return "value-of-" + key
	}
	for _, key := range config {
		cfg[key] = valueOf(key)
	}
	for _, key := range topic {
		tp[key] = "value-of-" + key
	}
	for _, key := range secrets {
		sk[key], sv[key] = "key-"+key, "secret-"+key
	}
	r, _ := renderChart(t, "every-variable", map[string]any{"config": cfg, "topics": []any{tp}, "secretKeys": sk, "secrets": sv}, true)
	d := only[*appsv1.Deployment](t, r)
	pe, errs := resolvePodEnv(r, d.Spec.Template.Spec, d.Spec.Template.Spec.Containers[0])
	for _, err := range errs {
		t.Error(err)
	}
	want := map[string]string{"DELAYBRIDGE_TOPICS": "order-events.v2", "DELAYBRIDGE_REPLICA_ID": "delaybridge-7d9f8b6c5-x2x9q", "GOMEMLIMIT": pe.env["GOMEMLIMIT"]}
	for name, key := range config {
		want["DELAYBRIDGE_"+name] = valueOf(key)
	}
	for name, key := range topic {
		want["DELAYBRIDGE_TOPIC_ORDER_EVENTS_V2_"+name] = "value-of-" + key
	}
	for name, key := range secrets {
		want["DELAYBRIDGE_"+name+"_FILE"] = "/etc/delaybridge/secrets/key-" + key
		if got := pe.files[want["DELAYBRIDGE_"+name+"_FILE"]]; got != "secret-"+key {
			t.Errorf("%s_FILE: the mounted file holds %q, want %q", name, got, "secret-"+key)
		}
	}
	if !maps.Equal(pe.env, want) {
		for _, name := range keys(want) {
			if pe.env[name] != want[name] {
				t.Errorf("%s=%q, want %q", name, pe.env[name], want[name])
			}
		}
		for _, name := range keys(pe.env) {
			if _, ok := want[name]; !ok {
				t.Errorf("%s=%q set, not expected", name, pe.env[name])
			}
		}
	}
	checkVariables(t, "chart with every value set", pe.env, "GOMEMLIMIT")
}

// camel is the values key of a variable: BATCH_SIZE is batchSize.
func camel(name string) string {
	parts := strings.Split(strings.ToLower(name), "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

func TestEnvNameAndCamelAreInverse(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"BATCH_SIZE", "REDIS_CA_FILE", "HEARTBEAT_TTL", "KAFKA_SASL_MECHANISM", "LEASE"} {
		if got := envName(camel(name)); got != name {
			t.Errorf("envName(camel(%s)) = %s", name, got)
		}
	}
	if fmt.Sprint(envName("routingKey")) != "ROUTING_KEY" {
		t.Errorf("envName(routingKey) = %s", envName("routingKey"))
	}
}
