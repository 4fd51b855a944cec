package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// grafanaSidecarLabel is what Grafana's dashboard sidecar (the grafana Helm
// chart's sidecar.dashboards, as kube-prometheus-stack configures it) looks
// for on ConfigMaps by default.
const grafanaSidecarLabel, grafanaSidecarValue = "grafana_dashboard", "1"

// lastAppliedLimit is the most an annotation may hold; kubectl apply (client
// side) copies the whole object into one.
const lastAppliedLimit = 256 * 1024

// checkDashboardConfigMap: the rendering ships deploy/grafana/delaybridge.json,
// byte for byte, in exactly one ConfigMap labelled for the Grafana sidecar.
func checkDashboardConfigMap(t *testing.T, r rendering) *corev1.ConfigMap {
	t.Helper()
	want, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	cms := filter(every[*corev1.ConfigMap](r), func(cm *corev1.ConfigMap) bool {
		return cm.Labels[grafanaSidecarLabel] == grafanaSidecarValue
	})
	if len(cms) != 1 {
		t.Fatalf("%s: want one ConfigMap labelled %s: %q (the Grafana sidecar loads those), got %d", r.name, grafanaSidecarLabel, grafanaSidecarValue, len(cms))
	}
	cm := cms[0]
	if len(cm.Data) != 1 || len(cm.BinaryData) != 0 {
		t.Fatalf("%s: ConfigMap %s: want one key, the dashboard, got %d keys", r.name, cm.Name, len(cm.Data)+len(cm.BinaryData))
	}
	for key, got := range cm.Data {
		if !strings.HasSuffix(key, ".json") {
			t.Errorf("%s: ConfigMap %s key %q: the sidecar writes it as a file Grafana loads only if it ends in .json", r.name, cm.Name, key)
		}
		if !bytes.Equal([]byte(got), want) {
			t.Errorf("%s: ConfigMap %s holds a dashboard that differs from %s (run make helm-sync)", r.name, cm.Name, dashboardFile)
		}
		if len(got) > lastAppliedLimit/2 {
			t.Errorf("%s: the dashboard is %d bytes: kubectl apply's last-applied annotation (%d bytes) would not hold it", r.name, len(got), lastAppliedLimit)
		}
	}
	return cm
}

func TestKustomizeShipsTheDashboardForTheGrafanaSidecar(t *testing.T) {
	t.Parallel()
	for _, r := range renderAll(t) {
		// No hash suffix: the sidecar writes each ConfigMap to a file of its
		// own, so a renamed one would leave the old dashboard behind.
		if cm := checkDashboardConfigMap(t, r); cm.Name != "delaybridge-dashboard" {
			t.Errorf("%s: dashboard ConfigMap %s: want the name delaybridge-dashboard, without a hash suffix", r.name, cm.Name)
		}
	}
}

// syncedCopies are files a chart or a kustomization carries as copies,
// because neither may read files outside its own directory; `make
// helm-sync` refreshes them from their sources.
var syncedCopies = map[string]string{
	filepath.Join(kubernetesDir, "base", "dashboard", "delaybridge.json"): dashboardFile,
	filepath.Join(chartDir, "files", "delaybridge.json"):                  dashboardFile,
	filepath.Join(chartDir, "files", "rules.yaml"):                        rulesFile,
}

// TestSyncedCopies fails while a copy differs from its source.
func TestSyncedCopies(t *testing.T) {
	t.Parallel()
	for copyPath, source := range syncedCopies {
		want, err := os.ReadFile(source)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(copyPath)
		if err != nil {
			t.Errorf("%s: %v (run make helm-sync)", copyPath, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from its source %s: run make helm-sync", copyPath, source)
		}
	}
}
