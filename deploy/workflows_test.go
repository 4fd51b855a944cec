package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The GitHub workflows, checked offline: they parse, have the jobs and steps
// a release needs, and use the Go of go.mod.

var workflowsDir = filepath.Join("..", ".github", "workflows")

type workflow struct {
	Name string         `json:"name"`
	On   map[string]any `json:"on"`
	Env  map[string]string
	Jobs map[string]workflowJob `json:"jobs"`
}

type workflowJob struct {
	Uses        string                     `json:"uses"`
	Needs       any                        `json:"needs"` // a job name or a list
	Permissions map[string]string          `json:"permissions"`
	Services    map[string]workflowService `json:"services"`
	Strategy    struct {
		Matrix map[string]any `json:"matrix"`
	} `json:"strategy"`
	Steps []workflowStep `json:"steps"`
}

type workflowService struct {
	Image string   `json:"image"`
	Ports []string `json:"ports"`
}

type workflowStep struct {
	Name string            `json:"name"`
	ID   string            `json:"id"`
	Uses string            `json:"uses"`
	Run  string            `json:"run"`
	If   string            `json:"if"`
	With map[string]any    `json:"with"`
	Env  map[string]string `json:"env"`
}

func (j workflowJob) needs() []string {
	switch n := j.Needs.(type) {
	case string:
		return []string{n}
	case []any:
		var out []string
		for _, v := range n {
			s, _ := v.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}

// runs is every step's shell text, joined.
func (j workflowJob) runs() string {
	var b strings.Builder
	for _, s := range j.Steps {
		b.WriteString(s.Run + "\n")
	}
	return b.String()
}

func (j workflowJob) step(uses string) (workflowStep, bool) {
	for _, s := range j.Steps {
		if name, _, _ := strings.Cut(s.Uses, "@"); name == uses {
			return s, true
		}
	}
	return workflowStep{}, false
}

func readWorkflow(t *testing.T, file string) workflow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(workflowsDir, file))
	if err != nil {
		t.Fatal(err)
	}
	// Strict: a duplicate key is an error, as it is for GitHub.
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(j, &raw); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	// YAML 1.1 reads an unquoted on: key as true.
	if v, ok := raw["true"]; ok {
		raw["on"] = v
		delete(raw, "true")
	}
	j, err = yaml.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(j, &w); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if w.Name == "" || len(w.On) == 0 || len(w.Jobs) == 0 {
		t.Fatalf("%s: want a name, triggers (on:) and jobs", file)
	}
	for name, job := range w.Jobs {
		if job.Uses == "" && len(job.Steps) == 0 {
			t.Errorf("%s: job %s has no steps", file, name)
		}
		for _, need := range job.needs() {
			if _, ok := w.Jobs[need]; !ok {
				t.Errorf("%s: job %s needs %q, which is not a job", file, name, need)
			}
		}
		for _, s := range job.Steps {
			if s.Uses != "" && !regexp.MustCompile(`^[\w.-]+/[\w./-]+@v\d+$`).MatchString(s.Uses) {
				t.Errorf("%s: job %s uses %q: pin an action's major version (owner/name@vN)", file, name, s.Uses)
			}
			if s.Uses == "" && s.Run == "" {
				t.Errorf("%s: job %s has a step that neither uses an action nor runs a command", file, name)
			}
		}
	}
	return w
}

// goModDirective is the go line of ../go.mod, whole (1.26.0).
func goModDirective(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)\s*$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("../go.mod has no go directive")
	}
	return string(m[1])
}

// checkSetupGo: every job that builds sets up go.mod's Go.
func checkSetupGo(t *testing.T, file, name string, job workflowJob) {
	t.Helper()
	s, ok := job.step("actions/setup-go")
	if !ok {
		t.Errorf("%s: job %s runs go without actions/setup-go", file, name)
		return
	}
	if got, want := s.With["go-version"], goModDirective(t); got != want {
		t.Errorf("%s: job %s: setup-go go-version %v, want go.mod's %q", file, name, got, want)
	}
}

func TestCIWorkflowRunsMakeTestOnPullRequests(t *testing.T) {
	t.Parallel()
	const file = "ci.yml"
	w := readWorkflow(t, file)
	for _, trigger := range []string{"pull_request", "workflow_call"} {
		if _, ok := w.On[trigger]; !ok {
			t.Errorf("%s: not run on %s", file, trigger)
		}
	}
	var found bool
	for name, job := range w.Jobs {
		if !regexp.MustCompile(`(?m)^\s*make test\s*$`).MatchString(job.runs()) {
			continue
		}
		found = true
		checkSetupGo(t, file, name, job)
		var rabbit bool
		for _, svc := range job.Services {
			rabbit = rabbit || (strings.HasPrefix(svc.Image, "rabbitmq:") && slices.Contains(svc.Ports, "5672:5672"))
		}
		if !rabbit {
			t.Errorf("%s: job %s: no rabbitmq service on port 5672", file, name)
		}
		// The tests start redis-server processes of their own: the binary
		// must be installed, and it serves 127.0.0.1:6379.
		if !strings.Contains(job.runs(), "apt-get install") || !strings.Contains(job.runs(), "redis-server") {
			t.Errorf("%s: job %s does not install redis-server", file, name)
		}
		// e2e's upgrade test builds 0.1.0 from the repository's history.
		if co, _ := job.step("actions/checkout"); co.With["fetch-depth"] != float64(0) {
			t.Errorf("%s: job %s: checkout needs fetch-depth: 0, or the upgrade test finds no 0.1.0 commit to build", file, name)
		}
	}
	if !found {
		t.Errorf("%s: no job runs make test", file)
	}
}

func TestReleaseWorkflow(t *testing.T) {
	t.Parallel()
	const file = "release.yml"
	w := readWorkflow(t, file)
	push, _ := w.On["push"].(map[string]any)
	if tags, _ := push["tags"].([]any); !slices.Contains(tags, any("v*")) {
		t.Errorf("%s: not run on a push of a v* tag (on.push.tags: %v)", file, push["tags"])
	}

	// The tests run first: the CI workflow, which runs make test.
	var testJob string
	for name, job := range w.Jobs {
		if job.Uses == "./.github/workflows/ci.yml" {
			testJob = name
		}
	}
	if testJob == "" {
		t.Fatalf("%s: no job runs the tests (uses: ./.github/workflows/ci.yml)", file)
	}
	// Every job that publishes something runs after the tests.
	var after func(name string, seen map[string]bool) bool
	after = func(name string, seen map[string]bool) bool {
		if seen[name] {
			return false
		}
		seen[name] = true
		for _, n := range w.Jobs[name].needs() {
			if n == testJob || after(n, seen) {
				return true
			}
		}
		return false
	}
	for name := range w.Jobs {
		if name != testJob && !after(name, map[string]bool{}) {
			t.Errorf("%s: job %s does not wait for the tests (%s)", file, name, testJob)
		}
	}

	// Static binaries for linux/amd64 and linux/arm64 with the Makefile's -ldflags.
	var binaries string
	for name, job := range w.Jobs {
		if strings.Contains(job.runs(), "go build") {
			binaries = name
		}
	}
	if binaries == "" {
		t.Fatalf("%s: no job builds the binaries", file)
	}
	bj := w.Jobs[binaries]
	checkSetupGo(t, file, binaries, bj)
	archs, _ := bj.Strategy.Matrix["goarch"].([]any)
	for _, arch := range []string{"amd64", "arm64"} {
		if !slices.Contains(archs, any(arch)) {
			t.Errorf("%s: job %s: matrix goarch %v lacks %s", file, binaries, archs, arch)
		}
	}
	env := map[string]string{}
	for _, s := range bj.Steps {
		if strings.Contains(s.Run, "go build") {
			env = s.Env
		}
	}
	if env["CGO_ENABLED"] != "0" || env["GOOS"] != "linux" || env["GOARCH"] != "${{ matrix.goarch }}" {
		t.Errorf("%s: job %s: the go build step needs CGO_ENABLED=0, GOOS=linux and GOARCH from the matrix, got %v", file, binaries, env)
	}
	if !strings.Contains(bj.runs(), `-ldflags "$(make -s ldflags)"`) || !strings.Contains(bj.runs(), "-trimpath") {
		t.Errorf("%s: job %s: go build must take the Makefile's -ldflags ($(make -s ldflags)) and -trimpath", file, binaries)
	}
	if co, _ := bj.step("actions/checkout"); co.With["fetch-depth"] != float64(0) {
		t.Errorf("%s: job %s: checkout needs fetch-depth: 0, the whole history as CI's", file, binaries)
	}

	// A multi-arch image.
	var image bool
	for name, job := range w.Jobs {
		s, ok := job.step("docker/build-push-action")
		if !ok {
			continue
		}
		image = true
		platforms, _ := s.With["platforms"].(string)
		for _, p := range []string{"linux/amd64", "linux/arm64"} {
			if !strings.Contains(platforms, p) {
				t.Errorf("%s: job %s: image platforms %q lack %s", file, name, platforms, p)
			}
		}
		if s.With["push"] != true {
			t.Errorf("%s: job %s: the image is not pushed", file, name)
		}
		args, _ := s.With["build-args"].(string)
		for _, arg := range []string{"VERSION=", "COMMIT=", "DATE="} {
			if !strings.Contains(args, arg) {
				t.Errorf("%s: job %s: build-args lack %s (the Dockerfile stamps it)", file, name, arg)
			}
		}
		if _, ok := job.step("docker/setup-qemu-action"); !ok {
			t.Errorf("%s: job %s: an arm64 image built on amd64 needs docker/setup-qemu-action", file, name)
		}
		if job.Permissions["packages"] != "write" {
			t.Errorf("%s: job %s: pushing to ghcr.io needs permissions packages: write", file, name)
		}
	}
	if !image {
		t.Errorf("%s: no job builds the image with docker/build-push-action", file)
	}
	if !strings.HasPrefix(w.Env["IMAGE"], "ghcr.io/delaybridge/delaybridge") {
		t.Errorf("%s: IMAGE %q: want ghcr.io/delaybridge/delaybridge, the image the manifests and the chart use", file, w.Env["IMAGE"])
	}

	// A release with the files and their checksums.
	var release bool
	for name, job := range w.Jobs {
		if !strings.Contains(job.runs(), "gh release create") {
			continue
		}
		release = true
		runs := job.runs()
		if !strings.Contains(runs, "sha256sum") || !strings.Contains(runs, "SHA256SUMS") {
			t.Errorf("%s: job %s: no SHA256SUMS of the released files", file, name)
		}
		if !slices.Contains(job.needs(), binaries) {
			t.Errorf("%s: job %s does not wait for the binaries (%s)", file, name, binaries)
		}
		if job.Permissions["contents"] != "write" {
			t.Errorf("%s: job %s: creating a release needs permissions contents: write", file, name)
		}
		if _, ok := job.step("actions/download-artifact"); !ok {
			t.Errorf("%s: job %s does not download the built files", file, name)
		}
	}
	if !release {
		t.Errorf("%s: no job creates the GitHub release (gh release create)", file)
	}
}
