package deploy

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// releaseVersion is the VERSION file's release: the one line X.Y.Z that
// `make build`, scripts/build-static.sh (the image) and the release
// workflow stamp into the binary.
func releaseVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "VERSION"))
	if err != nil {
		t.Fatalf("the VERSION file: %v", err)
	}
	v, ok := strings.CutSuffix(string(b), "\n")
	if !ok || !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(v) {
		t.Fatalf("VERSION holds %q: want one line X.Y.Z (no v, the tag is vX.Y.Z)", b)
	}
	return v
}

// envWithout is the test's environment without the named variables, plus
// extra: a VERSION in the caller's environment would hide the file's.
func envWithout(names []string, extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

// checkVersionOutput fails unless bin's `version` prints want and
// `version --json` has it as "version".
func checkVersionOutput(t *testing.T, bin, want string) {
	t.Helper()
	out, err := exec.Command(bin, "version").Output()
	if err != nil || string(out) != want+"\n" {
		t.Errorf("delaybridge version: want the VERSION file's %s, got %q (err %v)", want, out, err)
	}
	out, err = exec.Command(bin, "version", "--json").Output()
	var info struct{ Version, Commit string }
	if err == nil {
		err = json.Unmarshal(out, &info)
	}
	if err != nil || info.Version != want || info.Commit == "" || info.Commit == "unknown" {
		t.Errorf("delaybridge version --json: want version %s and a commit, got %s (err %v)", want, out, err)
	}
}

// TestMakeBuildStampsTheVersionFile builds cmd/delaybridge the way `make
// build` and the release workflow do (go build -trimpath with the
// Makefile's -ldflags, CGO_ENABLED=0) and checks that the binary names the
// VERSION file's release without any tag.
func TestMakeBuildStampsTheVersionFile(t *testing.T) {
	t.Parallel()
	want := releaseVersion(t)
	cmd := exec.Command("make", "-s", "ldflags")
	cmd.Dir = ".."
	cmd.Env = envWithout([]string{"VERSION", "MAKEFLAGS"})
	ldflags, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -s ldflags: %v", err)
	}
	if !strings.Contains(string(ldflags), "-X main.version="+want+" ") {
		t.Fatalf("make -s ldflags = %q: want -X main.version=%s (the VERSION file)", ldflags, want)
	}
	bin := filepath.Join(t.TempDir(), "delaybridge")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", strings.TrimSpace(string(ldflags)), "-o", bin, "./cmd/delaybridge")
	build.Dir = ".."
	build.Env = envWithout(nil, "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build with the Makefile's -ldflags: %v\n%s", err, out)
	}
	checkVersionOutput(t, bin, want)
}

// TestBuildStaticOfflineStampsTheVersionFile runs what the Dockerfile's
// build stage runs, scripts/build-static.sh, offline (GOPROXY=off,
// GOFLAGS=-mod=mod: the module cache is all there is) and without a
// VERSION build-arg, as a `docker build` without --build-arg VERSION does:
// the static binary names the VERSION file's release.
func TestBuildStaticOfflineStampsTheVersionFile(t *testing.T) {
	t.Parallel()
	want := releaseVersion(t)
	bin := filepath.Join(t.TempDir(), "delaybridge")
	cmd := exec.Command("sh", filepath.Join("..", "scripts", "build-static.sh"), bin)
	cmd.Env = envWithout([]string{"VERSION", "GOFLAGS", "GOPROXY"}, "GOFLAGS=-mod=mod", "GOPROXY=off", "COMMIT=0123456789ab")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/build-static.sh offline (GOPROXY=off GOFLAGS=-mod=mod): %v\n%s", err, out)
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("binary has a %s program header: it is dynamically linked", p.Type)
		}
	}
	ef.Close()
	checkVersionOutput(t, bin, want)
}

// TestReleaseVersionsAgree: the VERSION file, the Helm chart's version and
// appVersion, the image tag of the kustomize base and components and of the
// chart's production values, the image tags the install docs give, and
// CHANGELOG.md's newest released section with its compare links all name
// one release.
func TestReleaseVersionsAgree(t *testing.T) {
	t.Parallel()
	want := releaseVersion(t)
	c := loadChart(t)
	if c.Metadata.Version != want || c.Metadata.AppVersion != want {
		t.Errorf("Chart.yaml: version %q, appVersion %q: want the VERSION file's %s", c.Metadata.Version, c.Metadata.AppVersion, want)
	}

	kustomizations, err := filepath.Glob(filepath.Join("kubernetes", "*", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join("kubernetes", "components", "*", "kustomization.yaml"))
	tags := 0
	for _, file := range append(kustomizations, more...) {
		var k struct {
			Images []struct{ Name, NewName, NewTag string }
		}
		readYAML(t, file, &k)
		for _, img := range k.Images {
			if img.NewName != "ghcr.io/delaybridge/delaybridge" {
				continue
			}
			tags++
			if img.NewTag != want {
				t.Errorf("%s: image tag %q, want the VERSION file's %s", file, img.NewTag, want)
			}
		}
	}
	if tags == 0 {
		t.Errorf("no kustomization sets the image ghcr.io/delaybridge/delaybridge's tag")
	}
	var prod struct{ Image struct{ Tag string } }
	readYAML(t, filepath.Join("helm", "delaybridge", "ci", "production-values.yaml"), &prod)
	if prod.Image.Tag != "" && prod.Image.Tag != want {
		t.Errorf("helm/delaybridge/ci/production-values.yaml: image tag %q, want %s", prod.Image.Tag, want)
	}

	imageTag := regexp.MustCompile(`ghcr\.io/delaybridge/delaybridge:(\d+\.\d+\.\d+)`)
	for _, doc := range []string{filepath.Join("..", "docs", "installation.md"), "README.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range imageTag.FindAllStringSubmatch(string(b), -1) {
			if m[1] != want {
				t.Errorf("%s names the image %s: want :%s", doc, m[0], want)
			}
		}
	}

	checkChangelog(t, want)
}

// checkChangelog: an Unreleased section first, then the newest release's
// `## [X.Y.Z] - YYYY-MM-DD` with X.Y.Z the VERSION file's, and the compare
// links at the bottom: Unreleased from vX.Y.Z, X.Y.Z from the release
// before it.
func checkChangelog(t *testing.T, want string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	heads := regexp.MustCompile(`(?m)^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$`).FindAllStringSubmatch(log, -1)
	if len(heads) < 2 || heads[0][1] != "Unreleased" {
		t.Fatalf("CHANGELOG.md: want ## [Unreleased] first, then the releases; found %v", heads)
	}
	newest := heads[1]
	if newest[1] != want || newest[2] == "" {
		t.Errorf("CHANGELOG.md: newest released section %q (dated %q): want ## [%s] - YYYY-MM-DD", newest[1], newest[2], want)
	}
	const repo = "https://github.com/delaybridge/delaybridge"
	if link := "[Unreleased]: " + repo + "/compare/v" + want + "...HEAD"; !strings.Contains(log, "\n"+link+"\n") {
		t.Errorf("CHANGELOG.md lacks the link %q", link)
	}
	if len(heads) > 2 {
		previous := heads[2][1]
		if link := "[" + want + "]: " + repo + "/compare/v" + previous + "...v" + want; !strings.Contains(log, "\n"+link+"\n") {
			t.Errorf("CHANGELOG.md lacks the link %q", link)
		}
	}
}

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// acl010 is the daemon's Redis ACL that 0.1.0's docs/operations-security.md
// documented (its commands, from `git show
// 371c34b:docs/operations-security.md`).
const acl010 = `+ping +evalsha +eval +subscribe
    +time +zadd +zrem +zrange +zrangebyscore +zremrangebyrank +zremrangebyscore
    +zscore +zmscore +zcard +zcount +hset +hget +hmget +hdel +hincrby +hlen +hscan
    +hkeys +hrandfield +scan`

var aclCommand = regexp.MustCompile(`\+[a-z|]+`)

// TestUpgradingListsTheACLCommandsAddedSince010: CHANGELOG.md's "Upgrading
// from 0.1.0" names exactly the commands the documented daemon ACL has
// beyond 0.1.0's, so an operator who adds them is refused nothing.
func TestUpgradingListsTheACLCommandsAddedSince010(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "docs", "operations-security.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```\\s*\\nACL SETUSER delaybridge [^\\n]*\\n(.*?)```").FindSubmatch(b)
	if block == nil {
		t.Fatal("docs/operations-security.md: no ``` block with ACL SETUSER delaybridge")
	}
	before := map[string]bool{}
	for _, c := range aclCommand.FindAllString(acl010, -1) {
		before[c] = true
	}
	var added []string
	for _, c := range aclCommand.FindAllString(string(block[1]), -1) {
		if !before[c] && !slices.Contains(added, c) {
			added = append(added, c)
		}
	}
	log, err := os.ReadFile(filepath.Join("..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile(`(?s)### Upgrading from 0\.1\.0\n(.*?)\n### `).FindSubmatch(log)
	if section == nil {
		t.Fatal("CHANGELOG.md: no ### Upgrading from 0.1.0 section")
	}
	var listed []string
	for _, item := range strings.Split(string(section[1]), "\n- ") {
		if strings.Contains(item, "Redis ACL") {
			for _, c := range aclCommand.FindAllString(item, -1) {
				if !slices.Contains(listed, c) {
					listed = append(listed, c)
				}
			}
		}
	}
	slices.Sort(added)
	slices.Sort(listed)
	if !slices.Equal(added, listed) {
		t.Errorf("CHANGELOG.md's Upgrading from 0.1.0 lists the ACL commands %v; docs/operations-security.md's ACL adds %v to 0.1.0's", listed, added)
	}
}
