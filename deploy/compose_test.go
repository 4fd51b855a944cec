package deploy

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"sigs.k8s.io/yaml"
)

var composeFile = filepath.Join("compose", "compose.yaml")

// loadCompose loads the compose file with compose-go, the loader of
// `docker compose`: the file is validated against the Compose schema and
// relative paths are resolved.
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	abs, err := filepath.Abs(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	details := types.ConfigDetails{
		WorkingDir:  filepath.Dir(abs),
		ConfigFiles: []types.ConfigFile{{Filename: abs}},
		Environment: types.Mapping{},
	}
	p, err := loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName("delaybridge", true)
		o.ResolvePaths = true
	})
	if err != nil {
		t.Fatalf("%s: %v", composeFile, err)
	}
	return p
}

func composeEnv(s types.ServiceConfig) map[string]string {
	env := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	return env
}

// TestComposeStack checks the local stack: every service the issue asks
// for, on pinned real images, the daemon built from this Dockerfile with a
// configuration it accepts, reaching the other services by their names, and
// Prometheus and Grafana given the files they need.
func TestComposeStack(t *testing.T) {
	// Not parallel: loadConfig sets the process environment.
	p := loadCompose(t)
	for _, name := range []string{"redis", "rabbitmq", "kafka", "delaybridge", "prometheus", "grafana"} {
		if _, ok := p.Services[name]; !ok {
			t.Errorf("no service %s", name)
		}
	}
	for name, s := range p.Services {
		if s.Build != nil {
			continue
		}
		ref := s.Image[strings.LastIndex(s.Image, "/")+1:]
		if _, tag, ok := strings.Cut(ref, ":"); !ok || tag == "" || tag == "latest" {
			t.Errorf("service %s: image %q: pin a tag", name, s.Image)
		}
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("service %s: bind mount source %s: %v", name, v.Source, err)
			}
		}
	}
	if !strings.Contains(p.Services["rabbitmq"].Image, "management") {
		t.Errorf("rabbitmq: want the management image (its UI)")
	}
	kafkaEnv := composeEnv(p.Services["kafka"])
	if !strings.Contains(kafkaEnv["KAFKA_PROCESS_ROLES"], "controller") {
		t.Errorf("kafka: want KRaft mode (KAFKA_PROCESS_ROLES with controller), got %q", kafkaEnv["KAFKA_PROCESS_ROLES"])
	}

	db := p.Services["delaybridge"]
	root, _ := filepath.Abs("..")
	if db.Build == nil || filepath.Clean(db.Build.Context) != root {
		t.Fatalf("delaybridge: want build.context the repository root %s, got %+v", root, db.Build)
	}
	if _, err := os.Stat(filepath.Join(db.Build.Context, db.Build.Dockerfile)); err != nil {
		t.Errorf("delaybridge: build.dockerfile: %v", err)
	}
	env := composeEnv(db)
	checkVariables(t, "compose delaybridge", env)
	cfg, err := loadConfig(t, env, nil)
	if err != nil {
		t.Fatalf("compose delaybridge: the daemon rejects this configuration:\n%v", err)
	}
	if db.StopGracePeriod == nil || time.Duration(*db.StopGracePeriod) <= cfg.ShutdownTimeout {
		t.Errorf("delaybridge: stop_grace_period must exceed DELAYBRIDGE_SHUTDOWN_TIMEOUT (%s)", cfg.ShutdownTimeout)
	}
	if uid, _, _ := strings.Cut(db.User, ":"); uid != strconv.FormatInt(dockerfileUID(t), 10) {
		t.Errorf("delaybridge: user %q, want the image's user %d", db.User, dockerfileUID(t))
	}
	if !db.ReadOnly || !slices.Contains(db.CapDrop, "ALL") {
		t.Errorf("delaybridge: want read_only and cap_drop ALL, as in Kubernetes")
	}

	// Inside the stack, localhost is the container itself: every address
	// must name a service, and Kafka must advertise the one used.
	hosts := map[string]string{}
	for _, u := range []string{cfg.Redis.URL, cfg.AMQP.URL} {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		hosts[parsed.Hostname()] = parsed.Host
	}
	for _, b := range cfg.Kafka.Brokers {
		h, _, _ := net.SplitHostPort(b)
		hosts[h] = b
		if !strings.Contains(kafkaEnv["KAFKA_ADVERTISED_LISTENERS"], "//"+b) {
			t.Errorf("delaybridge: Kafka broker %s is not an advertised listener (%s)", b, kafkaEnv["KAFKA_ADVERTISED_LISTENERS"])
		}
	}
	for h, addr := range hosts {
		s, ok := p.Services[h]
		if !ok {
			t.Errorf("delaybridge: address %s is not a compose service", addr)
			continue
		}
		if _, ok := db.DependsOn[h]; !ok && !dependsIndirectly(p, db, h) {
			t.Errorf("delaybridge: does not wait for %s (depends_on)", s.Name)
		}
	}

	// Prometheus: its configuration and every rule file it names are mounted.
	prom := p.Services["prometheus"]
	mounts := map[string]string{}
	for _, v := range prom.Volumes {
		mounts[v.Target] = v.Source
	}
	if src := mounts["/etc/prometheus/prometheus.yml"]; src != mustAbs(t, filepath.Join("prometheus", "prometheus.yml")) {
		t.Errorf("prometheus: /etc/prometheus/prometheus.yml must be deploy/prometheus/prometheus.yml, got %q", src)
	}
	for _, rf := range readPrometheusConfig(t).RuleFiles {
		if src := mounts[rf]; src != mustAbs(t, rulesFile) {
			t.Errorf("prometheus: rule file %s must be deploy/prometheus/rules.yaml, got %q", rf, src)
		}
	}
	_, port, _ := net.SplitHostPort(cfg.HTTPAddr)
	for _, sc := range readPrometheusConfig(t).ScrapeConfigs {
		for _, sd := range sc.DNSSDConfigs {
			if strconv.Itoa(sd.Port) != port {
				t.Errorf("prometheus job %s scrapes port %d, the daemon listens on %s", sc.JobName, sd.Port, port)
			}
		}
	}

	checkGrafanaProvisioning(t, p.Services["grafana"])
}

func dependsIndirectly(p *types.Project, s types.ServiceConfig, target string) bool {
	seen := map[string]bool{}
	var visit func(name string) bool
	visit = func(name string) bool {
		if name == target {
			return true
		}
		if seen[name] {
			return false
		}
		seen[name] = true
		for dep := range p.Services[name].DependsOn {
			if visit(dep) {
				return true
			}
		}
		return false
	}
	for dep := range s.DependsOn {
		if visit(dep) {
			return true
		}
	}
	return false
}

// checkGrafanaProvisioning: the data source and dashboard provider files
// parse strictly, and the provider's folder holds the mounted dashboard.
func checkGrafanaProvisioning(t *testing.T, g types.ServiceConfig) {
	t.Helper()
	var datasources struct {
		APIVersion  int `json:"apiVersion"`
		Datasources []struct {
			Name      string `json:"name"`
			UID       string `json:"uid"`
			Type      string `json:"type"`
			Access    string `json:"access"`
			URL       string `json:"url"`
			IsDefault bool   `json:"isDefault"`
		} `json:"datasources"`
	}
	var providers struct {
		APIVersion int `json:"apiVersion"`
		Providers  []struct {
			Name                  string `json:"name"`
			Type                  string `json:"type"`
			DisableDeletion       bool   `json:"disableDeletion"`
			UpdateIntervalSeconds int    `json:"updateIntervalSeconds"`
			Options               struct {
				Path string `json:"path"`
			} `json:"options"`
		} `json:"providers"`
	}
	found := map[string]bool{}
	var dashboardTarget string
	for _, v := range g.Volumes {
		switch {
		case strings.HasPrefix(v.Target, "/etc/grafana/provisioning/datasources/"):
			found["datasources"] = true
			strictYAMLFile(t, v.Source, &datasources)
		case strings.HasPrefix(v.Target, "/etc/grafana/provisioning/dashboards/"):
			found["dashboards"] = true
			strictYAMLFile(t, v.Source, &providers)
		case v.Source == mustAbs(t, dashboardFile):
			dashboardTarget = v.Target
		}
	}
	if !found["datasources"] || !found["dashboards"] || dashboardTarget == "" {
		t.Fatalf("grafana: want the data source, the dashboard provider and deploy/grafana/delaybridge.json mounted; mounts %+v", g.Volumes)
	}
	if len(datasources.Datasources) != 1 || datasources.Datasources[0].Type != "prometheus" || datasources.Datasources[0].URL != "http://prometheus:9090" {
		t.Errorf("grafana: want one prometheus data source at http://prometheus:9090, got %+v", datasources.Datasources)
	}
	if len(providers.Providers) != 1 || providers.Providers[0].Options.Path != filepath.Dir(dashboardTarget) {
		t.Errorf("grafana: the dashboard provider must read %s, got %+v", filepath.Dir(dashboardTarget), providers.Providers)
	}
}

func strictYAMLFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Errorf("%s: %v", path, err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
