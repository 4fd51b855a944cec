package deploy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// consoleComponent is the value of app.kubernetes.io/component on the
// console's objects (components/console).
const consoleComponent = "console"

func isConsole(o object) bool {
	m, ok := o.typed.(metav1.Object)
	return ok && m.GetLabels()["app.kubernetes.io/component"] == consoleComponent
}

// daemonOnly is r without the console's and the HTTP API's objects: what
// the daemon's checks look at.
func daemonOnly(r rendering) rendering {
	out := rendering{name: r.name}
	for _, o := range componentOnly(r, apiComponent, false).objects {
		if !isConsole(o) {
			out.objects = append(out.objects, o)
		}
	}
	return out
}

func consoleOnly(r rendering) rendering {
	out := rendering{name: r.name}
	for _, o := range r.objects {
		if isConsole(o) {
			out.objects = append(out.objects, o)
		}
	}
	return out
}

// TestConsoleComponent: components/console adds the console as a Deployment
// of its own (`delaybridge console`, the daemon's settings and security
// context, listening on the pod's interfaces) and a ClusterIP Service; its
// token Secret is empty, so the console starts read-only.
func TestConsoleComponent(t *testing.T) {
	r := renderWithComponent(t, "components/console")
	r.name = "base+components/console"
	con := consoleOnly(r)
	d := only[*appsv1.Deployment](t, con)
	daemon := only[*appsv1.Deployment](t, daemonOnly(r))
	svc := only[*corev1.Service](t, con)
	if svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("console Service type %s: want ClusterIP (not exposed outside the cluster)", svc.Spec.Type)
	}
	if !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, d.Spec.Template.Labels) {
		t.Errorf("console Service selector %v does not select the console pods", svc.Spec.Selector)
	}
	if selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, daemon.Spec.Template.Labels) ||
		selects(d.Spec.Selector, daemon.Spec.Template.Labels) {
		t.Errorf("the console's selectors also select the daemon's pods")
	}
	// The daemon's Deployment, Service, PodDisruptionBudget and ServiceMonitor
	// select by the daemon's labels: none may take the console's pod for a
	// daemon.
	dsvc := only[*corev1.Service](t, daemonOnly(r))
	if selects(daemon.Spec.Selector, d.Spec.Template.Labels) ||
		selects(&metav1.LabelSelector{MatchLabels: dsvc.Spec.Selector}, d.Spec.Template.Labels) {
		t.Errorf("the daemon's selectors select the console's pod (labels %v)", d.Spec.Template.Labels)
	}
	spec, dspec := d.Spec.Template.Spec, daemon.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	c := spec.Containers[0]
	if strings.Join(c.Args, " ") != "console" || c.Image != dspec.Containers[0].Image {
		t.Errorf("container runs %s %v, want the daemon's image %s with args [console]", c.Image, c.Args, dspec.Containers[0].Image)
	}
	if diff := cmp.Diff(dspec.SecurityContext, spec.SecurityContext); diff != "" {
		t.Errorf("pod securityContext differs from the daemon's (-daemon +console):\n%s", diff)
	}
	if diff := cmp.Diff(dspec.Containers[0].SecurityContext, c.SecurityContext); diff != "" {
		t.Errorf("container securityContext differs from the daemon's (-daemon +console):\n%s", diff)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken must be false")
	}
	for _, sp := range svc.Spec.Ports {
		if p, ok := containerPort(c, sp.TargetPort); !ok || p != 8081 {
			t.Errorf("Service port %s: targetPort %s is not the console's port 8081", sp.Name, sp.TargetPort.String())
		}
	}
	pe, errs := resolvePodEnv(r, spec, c)
	for _, err := range errs {
		t.Error(err)
	}
	checkVariables(t, "console", pe.env)
	if pe.env["DELAYBRIDGE_CONSOLE_ADDR"] != ":8081" {
		t.Errorf("DELAYBRIDGE_CONSOLE_ADDR=%q: want :8081 (the default listens on loopback only)", pe.env["DELAYBRIDGE_CONSOLE_ADDR"])
	}
	if pe.env["DELAYBRIDGE_CONSOLE_READ_REQUIRES_TOKEN"] != "true" {
		t.Errorf("DELAYBRIDGE_CONSOLE_READ_REQUIRES_TOKEN=%q: the console component must hide message bodies without the token", pe.env["DELAYBRIDGE_CONSOLE_READ_REQUIRES_TOKEN"])
	}
	tokenFile := pe.env["DELAYBRIDGE_CONSOLE_TOKEN_FILE"]
	if tok, ok := pe.files[tokenFile]; !ok || tok != "" {
		t.Errorf("DELAYBRIDGE_CONSOLE_TOKEN_FILE=%s: want a mounted, empty token (read-only by default), got %q (mounted %v)", tokenFile, tok, ok)
	}
	for _, f := range []string{"DELAYBRIDGE_REDIS_URL_FILE", "DELAYBRIDGE_AMQP_URL_FILE"} {
		if pe.env[f] != envSourceValue(daemon, f) {
			t.Errorf("%s=%q, the daemon's is %q: the console must reach the same Redis", f, pe.env[f], envSourceValue(daemon, f))
		}
	}
}

func envSourceValue(d *appsv1.Deployment, name string) string {
	if e := envSource(d.Spec.Template.Spec.Containers[0], name); e != nil {
		return e.Value
	}
	return ""
}

// TestHelmConsole: console.enabled adds the console to the chart as the
// kustomize component does: its own Deployment with the daemon's security
// context and a ClusterIP Service, not selected by the daemon's selectors.
func TestHelmConsole(t *testing.T) {
	t.Parallel()
	r, _ := renderChart(t, "console", map[string]any{"console": map[string]any{"enabled": true},
		"secretKeys": map[string]any{"consoleToken": "console-token"}, "secrets": map[string]any{"consoleToken": "t0ken"}}, false)
	con := consoleOnly(r)
	d := only[*appsv1.Deployment](t, con)
	svc := only[*corev1.Service](t, con)
	daemon := only[*appsv1.Deployment](t, daemonOnly(r))
	dsvc := only[*corev1.Service](t, daemonOnly(r))
	if svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("console Service type %s, want ClusterIP", svc.Spec.Type)
	}
	if !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, d.Spec.Template.Labels) {
		t.Errorf("console Service does not select the console pods")
	}
	if selects(daemon.Spec.Selector, d.Spec.Template.Labels) || selects(&metav1.LabelSelector{MatchLabels: dsvc.Spec.Selector}, d.Spec.Template.Labels) {
		t.Errorf("the daemon's selectors select the console's pod")
	}
	spec, dspec := d.Spec.Template.Spec, daemon.Spec.Template.Spec
	c := spec.Containers[0]
	if diff := cmp.Diff(dspec.SecurityContext, spec.SecurityContext); diff != "" {
		t.Errorf("pod securityContext differs from the daemon's:\n%s", diff)
	}
	if diff := cmp.Diff(dspec.Containers[0].SecurityContext, c.SecurityContext); diff != "" {
		t.Errorf("container securityContext differs from the daemon's:\n%s", diff)
	}
	if strings.Join(c.Args, " ") != "console" || c.Image != dspec.Containers[0].Image {
		t.Errorf("container runs %s %v, want %s console", c.Image, c.Args, dspec.Containers[0].Image)
	}
	pe, errs := resolvePodEnv(r, spec, c)
	for _, err := range errs {
		t.Error(err)
	}
	checkVariables(t, "helm console", pe.env)
	if pe.env["DELAYBRIDGE_CONSOLE_ADDR"] != ":8081" || pe.files[pe.env["DELAYBRIDGE_CONSOLE_TOKEN_FILE"]] != "t0ken" {
		t.Errorf("console env %v: want DELAYBRIDGE_CONSOLE_ADDR=:8081 and the token file mounted", pe.env)
	}
	if pe.env["DELAYBRIDGE_CONSOLE_READ_REQUIRES_TOKEN"] != "true" {
		t.Errorf("DELAYBRIDGE_CONSOLE_READ_REQUIRES_TOKEN=%q: the chart's console must hide message bodies without the token", pe.env["DELAYBRIDGE_CONSOLE_READ_REQUIRES_TOKEN"])
	}
	off, _ := renderChart(t, "console-off", nil, false)
	if n := len(consoleOnly(off).objects); n != 0 {
		t.Errorf("console.enabled defaults to false, but %d console objects render", n)
	}
}
