package deploy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiComponent is the value of app.kubernetes.io/component on the HTTP
// API's objects (components/api, api.enabled).
const apiComponent = "api"

func componentOnly(r rendering, component string, want bool) rendering {
	out := rendering{name: r.name}
	for _, o := range r.objects {
		m, ok := o.typed.(metav1.Object)
		if (ok && m.GetLabels()["app.kubernetes.io/component"] == component) == want {
			out.objects = append(out.objects, o)
		}
	}
	return out
}

// checkAPIPods: the API's Deployment runs `delaybridge api` from the
// daemon's image with the daemon's security context, behind a ClusterIP
// Service that selects only its pods (and the daemon's selectors never its
// pods); it listens on all the pod's interfaces, and reads its tokens from
// a mounted Secret file. It returns the resolved environment.
func checkAPIPods(t *testing.T, r rendering) podEnv {
	t.Helper()
	api, daemon := componentOnly(r, apiComponent, true), daemonOnly(r)
	d := only[*appsv1.Deployment](t, api)
	svc := only[*corev1.Service](t, api)
	dd := only[*appsv1.Deployment](t, daemon)
	dsvc := only[*corev1.Service](t, daemon)
	if svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("api Service type %s, want ClusterIP", svc.Spec.Type)
	}
	if !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, d.Spec.Template.Labels) {
		t.Errorf("api Service selector %v does not select the api pods", svc.Spec.Selector)
	}
	if selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, dd.Spec.Template.Labels) ||
		selects(dd.Spec.Selector, d.Spec.Template.Labels) ||
		selects(&metav1.LabelSelector{MatchLabels: dsvc.Spec.Selector}, d.Spec.Template.Labels) {
		t.Errorf("the api's and the daemon's selectors overlap")
	}
	spec, dspec := d.Spec.Template.Spec, dd.Spec.Template.Spec
	c := spec.Containers[0]
	if strings.Join(c.Args, " ") != "api" || c.Image != dspec.Containers[0].Image {
		t.Errorf("container runs %s %v, want the daemon's image %s with args [api]", c.Image, c.Args, dspec.Containers[0].Image)
	}
	if diff := cmp.Diff(dspec.SecurityContext, spec.SecurityContext); diff != "" {
		t.Errorf("pod securityContext differs from the daemon's:\n%s", diff)
	}
	if diff := cmp.Diff(dspec.Containers[0].SecurityContext, c.SecurityContext); diff != "" {
		t.Errorf("container securityContext differs from the daemon's:\n%s", diff)
	}
	for _, sp := range svc.Spec.Ports {
		if p, ok := containerPort(c, sp.TargetPort); !ok || p != 8090 {
			t.Errorf("Service port %s: targetPort %s is not the api's port 8090", sp.Name, sp.TargetPort.String())
		}
	}
	pe, errs := resolvePodEnv(r, spec, c)
	for _, err := range errs {
		t.Error(err)
	}
	checkVariables(t, "api", pe.env)
	if pe.env["DELAYBRIDGE_API_ADDR"] != ":8090" {
		t.Errorf("DELAYBRIDGE_API_ADDR=%q, want :8090", pe.env["DELAYBRIDGE_API_ADDR"])
	}
	if _, ok := pe.files[pe.env["DELAYBRIDGE_API_TOKENS_FILE"]]; !ok {
		t.Errorf("DELAYBRIDGE_API_TOKENS_FILE=%q is not a mounted file", pe.env["DELAYBRIDGE_API_TOKENS_FILE"])
	}
	return pe
}

func TestAPIComponent(t *testing.T) {
	r := renderWithComponent(t, "components/api")
	r.name = "base+components/api"
	pe := checkAPIPods(t, r)
	if tok := pe.files[pe.env["DELAYBRIDGE_API_TOKENS_FILE"]]; tok != "" {
		t.Errorf("the component ships a token %q: it must start empty (the pods refuse to start until one is set)", tok)
	}
}

func TestHelmAPI(t *testing.T) {
	t.Parallel()
	r, _ := renderChart(t, "api", map[string]any{"api": map[string]any{"enabled": true},
		"secretKeys": map[string]any{"apiTokens": "api-tokens"}, "secrets": map[string]any{"apiTokens": "t0ken-0123456789abcdef:orders"}}, false)
	pe := checkAPIPods(t, r)
	if tok := pe.files[pe.env["DELAYBRIDGE_API_TOKENS_FILE"]]; tok != "t0ken-0123456789abcdef:orders" {
		t.Errorf("token file holds %q", tok)
	}
	if d := only[*appsv1.Deployment](t, componentOnly(r, apiComponent, true)); d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("api replicas %v, want the default 2", d.Spec.Replicas)
	}
	off, _ := renderChart(t, "api-off", nil, false)
	if n := len(componentOnly(off, apiComponent, true).objects); n != 0 {
		t.Errorf("api.enabled defaults to false, but %d api objects render", n)
	}
}
