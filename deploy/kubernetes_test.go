package deploy

import (
	"fmt"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// podEnv is what the daemon's container sees: its environment after envFrom
// and env are applied, and the content of every file mounted from a Secret
// or ConfigMap.
type podEnv struct {
	env   map[string]string
	files map[string]string
}

func resolvePodEnv(r rendering, pod corev1.PodSpec, c corev1.Container) (podEnv, []error) {
	var errs []error
	cms, secrets := map[string]map[string]string{}, map[string]map[string]string{}
	for _, cm := range every[*corev1.ConfigMap](r) {
		cms[cm.Name] = cm.Data
	}
	for _, s := range every[*corev1.Secret](r) {
		data := map[string]string{}
		for k, v := range s.Data {
			data[k] = string(v)
		}
		for k, v := range s.StringData {
			data[k] = v
		}
		secrets[s.Name] = data
	}
	pe := podEnv{env: map[string]string{}, files: map[string]string{}}
	for _, from := range c.EnvFrom {
		var src map[string]string
		var ok bool
		switch {
		case from.ConfigMapRef != nil:
			src, ok = cms[from.ConfigMapRef.Name]
			if !ok {
				errs = append(errs, fmt.Errorf("envFrom: no ConfigMap %q", from.ConfigMapRef.Name))
			}
		case from.SecretRef != nil:
			src, ok = secrets[from.SecretRef.Name]
			if !ok {
				errs = append(errs, fmt.Errorf("envFrom: no Secret %q", from.SecretRef.Name))
			}
		}
		for k, v := range src {
			pe.env[from.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			pe.env[e.Name] = e.Value
			continue
		}
		vf := e.ValueFrom
		switch {
		case vf.FieldRef != nil && vf.FieldRef.FieldPath == "metadata.name":
			pe.env[e.Name] = "delaybridge-7d9f8b6c5-x2x9q"
		case vf.ResourceFieldRef != nil:
			q, ok := c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(vf.ResourceFieldRef.Resource, "limits."))]
			if !strings.HasPrefix(vf.ResourceFieldRef.Resource, "limits.") || !ok {
				errs = append(errs, fmt.Errorf("env %s: resourceFieldRef %s is not a limit the container sets", e.Name, vf.ResourceFieldRef.Resource))
			}
			pe.env[e.Name] = strconv.FormatInt(q.Value(), 10)
		case vf.SecretKeyRef != nil:
			v, ok := secrets[vf.SecretKeyRef.Name][vf.SecretKeyRef.Key]
			if !ok {
				errs = append(errs, fmt.Errorf("env %s: no key %q in Secret %q", e.Name, vf.SecretKeyRef.Key, vf.SecretKeyRef.Name))
			}
			pe.env[e.Name] = v
		case vf.ConfigMapKeyRef != nil:
			v, ok := cms[vf.ConfigMapKeyRef.Name][vf.ConfigMapKeyRef.Key]
			if !ok {
				errs = append(errs, fmt.Errorf("env %s: no key %q in ConfigMap %q", e.Name, vf.ConfigMapKeyRef.Key, vf.ConfigMapKeyRef.Name))
			}
			pe.env[e.Name] = v
		default:
			errs = append(errs, fmt.Errorf("env %s: valueFrom the tests do not resolve", e.Name))
		}
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("volumeMount %s: no such volume", m.Name))
			continue
		}
		var data map[string]string
		var items []corev1.KeyToPath
		switch {
		case v.Secret != nil:
			data, ok = secrets[v.Secret.SecretName]
			items = v.Secret.Items
			if !ok {
				errs = append(errs, fmt.Errorf("volume %s: no Secret %q", v.Name, v.Secret.SecretName))
			}
		case v.ConfigMap != nil:
			data, ok = cms[v.ConfigMap.Name]
			items = v.ConfigMap.Items
			if !ok {
				errs = append(errs, fmt.Errorf("volume %s: no ConfigMap %q", v.Name, v.ConfigMap.Name))
			}
		}
		if len(items) == 0 {
			for k, content := range data {
				pe.files[path.Join(m.MountPath, k)] = content
			}
		}
		for _, it := range items {
			pe.files[path.Join(m.MountPath, it.Path)] = data[it.Key]
		}
	}
	return pe, errs
}

func selects(sel *metav1.LabelSelector, set map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && !s.Empty() && s.Matches(labels.Set(set))
}

// containerPort resolves a probe's or Service's port to a number.
func containerPort(c corev1.Container, p intstr.IntOrString) (int32, bool) {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

// TestDeployment checks, in every rendering, what makes the Deployment safe
// to run: security, probes, resources, rollout, spread, and a configuration
// the daemon itself accepts.
func TestDeployment(t *testing.T) {
	// Not parallel: loadConfig sets the process environment.
	uid := dockerfileUID(t)
	for _, r := range renderAll(t) {
		r := daemonOnly(r) // components/console is checked by TestConsoleComponent
		t.Run(strings.ReplaceAll(r.name, "/", "_"), func(t *testing.T) {
			d := only[*appsv1.Deployment](t, r)
			checkDeployment(t, r, d, uid, 3)
		})
	}
}

// checkDeployment checks the Deployment d of rendering r (kustomize's or the
// Helm chart's): the image runs as uid, with wantReplicas replicas.
func checkDeployment(t *testing.T, r rendering, d *appsv1.Deployment, uid int64, wantReplicas int32) {
	spec := d.Spec.Template.Spec
	if d.Spec.Replicas == nil || *d.Spec.Replicas != wantReplicas {
		t.Errorf("replicas: want %d, got %v", wantReplicas, d.Spec.Replicas)
	}
	if !selects(d.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("selector %v does not select the pod labels %v", d.Spec.Selector, d.Spec.Template.Labels)
	}
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil || ru.MaxUnavailable == nil ||
		(ru.MaxUnavailable.String() != "0" && ru.MaxUnavailable.String() != "0%") {
		t.Errorf("strategy: want RollingUpdate with maxUnavailable 0 (the default is 25%%), got %+v", d.Spec.Strategy)
	}
	spread := map[string]bool{}
	for _, tsc := range spec.TopologySpreadConstraints {
		if !selects(tsc.LabelSelector, d.Spec.Template.Labels) {
			t.Errorf("topologySpreadConstraint %s: its labelSelector does not select the pods", tsc.TopologyKey)
		}
		spread[tsc.TopologyKey] = true
	}
	if !spread["kubernetes.io/hostname"] {
		t.Errorf("no topologySpreadConstraint over kubernetes.io/hostname (nodes)")
	}

	// Security.
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("pod securityContext: runAsNonRoot must be true")
	}
	if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser == 0 || *psc.RunAsUser != uid {
		t.Errorf("pod securityContext: runAsUser must be the image's non-root user %d", uid)
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext: seccompProfile must be RuntimeDefault")
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken must be false: the daemon never calls the Kubernetes API")
	}
	if spec.ServiceAccountName == "" || len(filter(every[*corev1.ServiceAccount](r), func(s *corev1.ServiceAccount) bool { return s.Name == spec.ServiceAccountName })) != 1 {
		t.Errorf("serviceAccountName %q is not rendered", spec.ServiceAccountName)
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Errorf("the pod must not share the host's network, PID or IPC namespace")
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatalf("container %s has no securityContext", c.Name)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("container: allowPrivilegeEscalation must be false")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("container: readOnlyRootFilesystem must be true")
	case sc.Privileged != nil && *sc.Privileged:
		t.Errorf("container: must not be privileged")
	case sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0:
		t.Errorf("container: capabilities must drop ALL and add none, got %+v", sc.Capabilities)
	case sc.RunAsUser != nil && *sc.RunAsUser == 0:
		t.Errorf("container: runAsUser 0")
	}

	// Image.
	ref := c.Image
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		ref = ref[i+1:]
	}
	if name, tag, ok := strings.Cut(ref, ":"); !ok || tag == "" || tag == "latest" || name == "" {
		if !strings.Contains(c.Image, "@sha256:") {
			t.Errorf("image %q: pin a version tag or digest, not latest", c.Image)
		}
	}

	// Resources.
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := c.Resources.Requests[res]
		lim, okLim := c.Resources.Limits[res]
		if !okReq || !okLim {
			t.Errorf("resources: %s needs a request and a limit", res)
			continue
		}
		if req.Cmp(lim) > 0 {
			t.Errorf("resources: %s request %s above its limit %s", res, req.String(), lim.String())
		}
	}

	// Environment: every name is real, and the daemon accepts the values.
	pe, errs := resolvePodEnv(r, spec, c)
	for _, err := range errs {
		t.Error(err)
	}
	for name := range pe.env {
		if !validationOK(validation.IsEnvVarName(name)) {
			t.Errorf("env %q is not a valid variable name", name)
		}
	}
	checkVariables(t, "Deployment env", pe.env, "GOMEMLIMIT")
	checkGoMemLimit(t, c, pe.env)
	if rid := envSource(c, "DELAYBRIDGE_REPLICA_ID"); rid == nil || rid.ValueFrom == nil || rid.ValueFrom.FieldRef == nil || rid.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("DELAYBRIDGE_REPLICA_ID must come from the pod name (downward API metadata.name)")
	}
	// A secret's value belongs in the Secret, never in the pod spec or a ConfigMap.
	vars := knownVariables(t)
	for _, e := range c.Env {
		if vars.secret[strings.TrimPrefix(e.Name, "DELAYBRIDGE_")] && e.Value != "" {
			t.Errorf("%s is written in the pod spec: read it from the Secret (%s_FILE)", e.Name, e.Name)
		}
	}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		for _, cm := range every[*corev1.ConfigMap](r) {
			for k := range cm.Data {
				if cm.Name == from.ConfigMapRef.Name && vars.secret[strings.TrimPrefix(from.Prefix+k, "DELAYBRIDGE_")] {
					t.Errorf("ConfigMap %s holds %s: secrets belong in the Secret", cm.Name, from.Prefix+k)
				}
			}
		}
	}
	cfg, err := loadConfig(t, pe.env, pe.files)
	if err != nil {
		t.Fatalf("the daemon rejects this configuration:\n%v", err)
	}
	if len(cfg.Topics) == 0 {
		t.Errorf("no topic configured")
	}

	// Shutdown fits in the grace period.
	grace := time.Duration(30) * time.Second
	if spec.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	}
	// After the shutdown timeout the daemon still closes the AMQP
	// connection (up to 5 s with a broker that does not answer) and the
	// HTTP server (2 s): docs/operations-security.md.
	const exitAfterTimeout = 7 * time.Second
	if grace < cfg.ShutdownTimeout+exitAfterTimeout {
		t.Errorf("terminationGracePeriodSeconds (%s) must be at least DELAYBRIDGE_SHUTDOWN_TIMEOUT (%s) + %s, or the kubelet may kill the daemon mid-shutdown", grace, cfg.ShutdownTimeout, exitAfterTimeout)
	}

	// The HTTP port, the probes, the Service and the scrape annotation agree.
	_, portStr, err := net.SplitHostPort(cfg.HTTPAddr)
	if err != nil {
		t.Fatalf("HTTP address %q: %v", cfg.HTTPAddr, err)
	}
	httpPort, _ := strconv.Atoi(portStr)
	if len(c.Ports) != 1 || int(c.Ports[0].ContainerPort) != httpPort {
		t.Errorf("container ports %v: want one, the daemon's HTTP port %d (DELAYBRIDGE_HTTP_ADDR=%s)", c.Ports, httpPort, cfg.HTTPAddr)
	}
	for _, p := range c.Ports {
		if !validationOK(validation.IsValidPortName(p.Name)) {
			t.Errorf("port name %q is not valid", p.Name)
		}
	}
	for name, probe := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != name {
			t.Errorf("want a probe on %s (liveness /healthz, readiness /readyz)", name)
			continue
		}
		if p, ok := containerPort(c, probe.HTTPGet.Port); !ok || int(p) != httpPort {
			t.Errorf("probe %s: port %s is not the daemon's HTTP port %d", name, probe.HTTPGet.Port.String(), httpPort)
		}
	}
	if ann := d.Spec.Template.Annotations["prometheus.io/port"]; ann != "" && ann != portStr {
		t.Errorf("annotation prometheus.io/port=%s, but the daemon listens on %s", ann, portStr)
	}

	svc := only[*corev1.Service](t, r)
	if !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, d.Spec.Template.Labels) {
		t.Errorf("Service %s selector %v does not select the pods", svc.Name, svc.Spec.Selector)
	}
	for _, sp := range svc.Spec.Ports {
		if p, ok := containerPort(c, sp.TargetPort); !ok || int(p) != httpPort {
			t.Errorf("Service port %s: targetPort %s is not the daemon's HTTP port", sp.Name, sp.TargetPort.String())
		}
	}

	pdb := only[*policyv1.PodDisruptionBudget](t, r)
	if !selects(pdb.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("PodDisruptionBudget selector does not select the pods")
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.Type != intstr.Int || pdb.Spec.MaxUnavailable.IntVal < 1 || pdb.Spec.MaxUnavailable.IntVal >= *d.Spec.Replicas {
		t.Errorf("PodDisruptionBudget: want maxUnavailable from 1 to replicas-1, got %v", pdb.Spec.MaxUnavailable)
	}

	for _, sm := range every[*monitoringv1.ServiceMonitor](r) {
		if !selects(&sm.Spec.Selector, svc.Labels) {
			t.Errorf("ServiceMonitor %s selects no Service (Service labels %v)", sm.Name, svc.Labels)
		}
		for _, ep := range sm.Spec.Endpoints {
			if !slices.Contains(servicePortNames(svc), ep.Port) {
				t.Errorf("ServiceMonitor endpoint port %q is not a port name of Service %s", ep.Port, svc.Name)
			}
			if ep.Path != "" && ep.Path != "/metrics" {
				t.Errorf("ServiceMonitor endpoint path %q: the daemon serves /metrics", ep.Path)
			}
		}
	}
}

// checkGoMemLimit: GOMEMLIMIT is 90% of the container's memory limit, in
// bytes (rounded down). Above it the Go runtime collects garbage harder; the
// other 10% is for what it does not count (goroutine stacks, the kernel's
// socket buffers), so the heap slows down before the OOM killer strikes.
func checkGoMemLimit(t *testing.T, c corev1.Container, env map[string]string) {
	t.Helper()
	lim, ok := c.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		return // checked with the resources
	}
	want := lim.Value() * 9 / 10
	got, set := env["GOMEMLIMIT"]
	if !set {
		t.Errorf("GOMEMLIMIT is not set: want %d, 90%% of the memory limit %s", want, lim.String())
		return
	}
	if n, err := strconv.ParseInt(got, 10, 64); err != nil || n != want {
		t.Errorf("GOMEMLIMIT=%q: want %d bytes, 90%% of the memory limit %s", got, want, lim.String())
	}
}

func envSource(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func servicePortNames(s *corev1.Service) []string {
	var out []string
	for _, p := range s.Spec.Ports {
		out = append(out, p.Name)
	}
	return out
}

func validationOK(errs []string) bool { return len(errs) == 0 }

func filter[T any](in []T, keep func(T) bool) []T {
	var out []T
	for _, v := range in {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}
