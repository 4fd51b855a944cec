package deploy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const kubernetesDir = "kubernetes"

// object is one rendered manifest, decoded into its real API type.
type object struct {
	apiVersion, kind, name string
	typed                  any
}

// rendering is the output of one kustomization.
type rendering struct {
	name    string // relative to kubernetes/, e.g. overlays/kafka
	objects []object
}

// newTyped is every kind the manifests may hold. A kind missing here fails
// the tests: add its real type rather than skipping it.
var newTyped = map[string]func() any{
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"v1/ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return &monitoringv1.PrometheusRule{} },
}

// decodeStrict decodes one manifest the way the API server does: YAML to
// JSON, then case-sensitive JSON with unknown and duplicate fields as
// errors (sigs.k8s.io/json, which the API server uses).
func decodeStrict(doc []byte) (object, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return object{}, fmt.Errorf("yaml: %w", err)
	}
	var tm struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &tm); err != nil {
		return object{}, fmt.Errorf("type and name: %w", err)
	}
	key := tm.APIVersion + "/" + tm.Kind
	mk, ok := newTyped[key]
	if !ok {
		return object{}, fmt.Errorf("%s %s: no API type known to the tests for %s", tm.Kind, tm.Metadata.Name, key)
	}
	typed := mk()
	strict, err := sigsjson.UnmarshalStrict(j, typed, sigsjson.DisallowUnknownFields)
	if err != nil {
		return object{}, fmt.Errorf("%s %s: %w", tm.Kind, tm.Metadata.Name, err)
	}
	if len(strict) > 0 {
		return object{}, fmt.Errorf("%s %s: %v", tm.Kind, tm.Metadata.Name, strict)
	}
	return object{apiVersion: tm.APIVersion, kind: tm.Kind, name: tm.Metadata.Name, typed: typed}, nil
}

// kustomizeRoots lists every directory under kubernetes/ with a
// kustomization, and whether it is a Component (rendered on top of base).
func kustomizeRoots(t *testing.T) (roots []string, components []string) {
	t.Helper()
	err := filepath.WalkDir(kubernetesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "kustomization.yaml" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var k struct{ Kind string }
		if err := yaml.Unmarshal(b, &k); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rel, _ := filepath.Rel(kubernetesDir, filepath.Dir(path))
		if k.Kind == "Component" {
			components = append(components, rel)
		} else {
			roots = append(roots, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(roots, "base") || len(roots) < 3 || len(components) < 1 {
		t.Fatalf("want kubernetes/base, two overlays and a component; found kustomizations %v and components %v", roots, components)
	}
	return roots, components
}

// render runs kustomize (the library kubectl uses) on dir, on disk.
func render(t *testing.T, dir string) rendering {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var r rendering
	for _, res := range m.Resources() {
		doc, err := res.AsYAML()
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		r.objects = append(r.objects, obj)
	}
	return r
}

// renderWithComponent renders base plus a component through a kustomization
// in a temporary directory, as a user's overlay would include it.
func renderWithComponent(t *testing.T, component string) rendering {
	t.Helper()
	dir := t.TempDir()
	// kustomize refuses absolute paths: reach base and the component from
	// the temporary directory by relative ones.
	rel := func(p string) string {
		a, err := filepath.Abs(filepath.Join(kubernetesDir, p))
		if err != nil {
			t.Fatal(err)
		}
		r, err := filepath.Rel(dir, a)
		if err != nil {
			t.Fatal(err)
		}
		return filepath.ToSlash(r)
	}
	k := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - %s\ncomponents:\n  - %s\n", rel("base"), rel(component))
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return render(t, dir)
}

// renderAll renders every kustomization and every component on top of base.
func renderAll(t *testing.T) []rendering {
	t.Helper()
	roots, components := kustomizeRoots(t)
	var out []rendering
	for _, root := range roots {
		r := render(t, filepath.Join(kubernetesDir, root))
		r.name = root
		out = append(out, r)
	}
	for _, c := range components {
		r := renderWithComponent(t, c)
		r.name = "base+" + c
		out = append(out, r)
	}
	return out
}

// only returns the single object of type T in r, failing if there is not
// exactly one.
func only[T any](t *testing.T, r rendering) T {
	t.Helper()
	all := every[T](r)
	if len(all) != 1 {
		var zero T
		t.Fatalf("%s: want exactly one %T, found %d", r.name, zero, len(all))
	}
	return all[0]
}

func every[T any](r rendering) []T {
	var out []T
	for _, o := range r.objects {
		if v, ok := o.typed.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func TestStrictDecodingRejectsMistakes(t *testing.T) {
	t.Parallel()
	good := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: 3\n"
	if _, err := decodeStrict([]byte(good)); err != nil {
		t.Fatalf("a valid Deployment was rejected: %v", err)
	}
	for name, doc := range map[string]string{
		"misspelt field":  strings.Replace(good, "replicas", "replica", 1),
		"wrong case":      strings.Replace(good, "replicas", "Replicas", 1),
		"duplicate field": good + "  replicas: 4\n",
		"wrong type":      strings.Replace(good, "3", "three", 1),
		"unknown kind":    strings.Replace(good, "Deployment", "Deploymnet", 1),
		"misspelt nested": good + "  template:\n    spec:\n      containers:\n        - name: a\n          securityContext:\n            readOnlyRootFileSystem: true\n",
	} {
		if _, err := decodeStrict([]byte(doc)); err == nil {
			t.Errorf("%s: accepted:\n%s", name, doc)
		}
	}
}

func TestKustomizationsRenderStrictly(t *testing.T) {
	t.Parallel()
	for _, r := range renderAll(t) {
		if strings.HasSuffix(r.name, "components/console") && len(consoleOnly(r).objects) != 3 {
			t.Errorf("%s: want the console's Deployment, Service and Secret, got %d objects", r.name, len(consoleOnly(r).objects))
		}
		if strings.HasSuffix(r.name, "components/api") && len(componentOnly(r, apiComponent, true).objects) != 3 {
			t.Errorf("%s: want the api's Deployment, Service and Secret, got %d objects", r.name, len(componentOnly(r, apiComponent, true).objects))
		}
		r := daemonOnly(r) // components/console and components/api: TestConsoleComponent, TestAPIComponent
		if len(r.objects) == 0 {
			t.Errorf("%s rendered no objects", r.name)
		}
		kinds := map[string]int{}
		for _, o := range r.objects {
			kinds[o.kind]++
		}
		for _, k := range []string{"Deployment", "Secret", "Service", "PodDisruptionBudget", "ServiceAccount"} {
			if kinds[k] != 1 {
				t.Errorf("%s: want one %s, got %d", r.name, k, kinds[k])
			}
		}
		if kinds["ConfigMap"] != 2 {
			t.Errorf("%s: want two ConfigMaps (the settings and the Grafana dashboard), got %d", r.name, kinds["ConfigMap"])
		}
		if strings.HasSuffix(r.name, "components/prometheus-operator") && kinds["ServiceMonitor"] != 1 {
			t.Errorf("%s: want one ServiceMonitor, got %d", r.name, kinds["ServiceMonitor"])
		}
		if !strings.HasSuffix(r.name, "components/prometheus-operator") && kinds["ServiceMonitor"] != 0 {
			t.Errorf("%s: the ServiceMonitor must stay optional (a cluster without the Prometheus Operator rejects it)", r.name)
		}
	}
}
