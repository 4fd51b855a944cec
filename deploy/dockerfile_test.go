package deploy

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd   string // upper-case: FROM, RUN, ...
	args  string
	stage int // index of the FROM it belongs to
}

func readDockerfile(t *testing.T) []instruction {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatalf("read Dockerfile: %v", err)
	}
	var out []instruction
	stage := -1
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue // a comment inside a continued instruction
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, instruction{cmd: cmd, args: strings.TrimSpace(args), stage: stage})
	}
	if stage < 1 {
		t.Fatalf("Dockerfile: want a multi-stage build (a build stage and a final stage), found %d FROM", stage+1)
	}
	return out
}

// dockerfileUID is the numeric user the image runs as; the Kubernetes
// manifests must run the pod as the same user.
func dockerfileUID(t *testing.T) int64 {
	t.Helper()
	var user string // the last USER is the one the image runs as
	for _, in := range readDockerfile(t) {
		if in.cmd == "USER" {
			user = in.args
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	n, err := strconv.ParseInt(uid, 10, 64)
	if err != nil || n == 0 {
		t.Fatalf("Dockerfile: USER %q must be a numeric non-root user: Kubernetes' runAsNonRoot cannot verify a user name", user)
	}
	return n
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	ins := readDockerfile(t)
	final := ins[len(ins)-1].stage
	var froms []string
	has := map[string][]string{} // final stage's instructions
	buildRunsScript := false
	for _, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, in.args)
		}
		if in.stage == final {
			has[in.cmd] = append(has[in.cmd], in.args)
		}
		if in.stage < final && in.cmd == "RUN" && strings.Contains(in.args, "scripts/build-static.sh") {
			buildRunsScript = true
		}
		if in.cmd == "HEALTHCHECK" {
			t.Errorf("HEALTHCHECK: leave health to the Kubernetes probes")
		}
	}

	// The build stage's Go is the one go.mod asks for.
	goVersion := goModVersion(t)
	if !regexp.MustCompile(`^golang:` + regexp.QuoteMeta(goVersion) + `(\.\d+)?(-\S+)?\s+AS\s+\S+$`).MatchString(froms[0]) {
		t.Errorf("first FROM %q: want golang:%s (go.mod's go %s) AS <name>", froms[0], goVersion, goVersion)
	}
	if !buildRunsScript {
		t.Errorf("the build stage must RUN scripts/build-static.sh, the script these tests run, so the tested binary is the shipped one")
	}
	if f := froms[len(froms)-1]; !strings.HasPrefix(f, "gcr.io/distroless/static") && f != "scratch" {
		t.Errorf("final FROM %q: want distroless static (or scratch with CA certificates)", f)
	}
	if got := has["COPY"]; len(got) != 1 || !strings.HasPrefix(got[0], "--from=") || !strings.HasSuffix(got[0], " /delaybridge") {
		t.Errorf("final stage: want one COPY --from=<build> .../delaybridge /delaybridge, got %q", got)
	}
	if got := has["ENTRYPOINT"]; len(got) != 1 || got[0] != `["/delaybridge"]` {
		t.Errorf(`ENTRYPOINT: want ["/delaybridge"] (exec form: no shell in the image), got %q`, got)
	}
	if got := has["CMD"]; len(got) != 1 || got[0] != `["run"]` {
		t.Errorf(`CMD: want ["run"], got %q`, got)
	}
	_, port, _ := net.SplitHostPort(knownVariables(t).defaults["HTTP_ADDR"])
	if got := has["EXPOSE"]; len(got) != 1 || got[0] != port {
		t.Errorf("EXPOSE: want the daemon's default HTTP port %s, got %q", port, got)
	}
	if got := has["USER"]; len(got) != 1 {
		t.Errorf("final stage: want one USER, got %q", got)
	}
	dockerfileUID(t)
}

func goModVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("../go.mod has no go directive")
	}
	return string(m[1])
}

// TestDockerignoreKeepsBuildInputs fails when .dockerignore hides a file the
// image build needs (every Go file of ./cmd/delaybridge's packages in this
// module, go.mod, go.sum, the build script and the VERSION file it stamps),
// and when it lets in .git.
func TestDockerignoreKeepsBuildInputs(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("..", ".dockerignore"))
	if err != nil {
		t.Fatalf("a .dockerignore must exist: %v", err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}
	needed := []string{"go.mod", "go.sum", "scripts/build-static.sh", "VERSION"}
	cmd := exec.Command("go", "list", "-e", "-deps", "-json=Dir,GoFiles,EmbedFiles,Module,Error", "./cmd/delaybridge")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./cmd/delaybridge: %v", err)
	}
	root, _ := filepath.Abs("..")
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Dir        string
			GoFiles    []string
			EmbedFiles []string
			Module     *struct{ Path string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || p.Module.Path != "github.com/delaybridge/delaybridge" {
			continue
		}
		for _, f := range append(p.GoFiles, p.EmbedFiles...) {
			rel, err := filepath.Rel(root, filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			needed = append(needed, filepath.ToSlash(rel))
		}
	}
	if len(needed) < 5 {
		t.Fatalf("go list found only %v: the build inputs are not listed", needed)
	}
	for _, f := range needed {
		if ignored, err := pm.MatchesOrParentMatches(f); err != nil || ignored {
			t.Errorf(".dockerignore hides %s, which the image build needs", f)
		}
	}
	for _, f := range []string{".git/HEAD", "deploy/go.mod"} {
		if ignored, _ := pm.MatchesOrParentMatches(f); !ignored {
			t.Errorf(".dockerignore lets %s into the build context", f)
		}
	}
}

// buildStatic runs the Dockerfile's build script, as the image build does.
func buildStatic(t *testing.T, version, commit string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "delaybridge")
	cmd := exec.Command("sh", filepath.Join("..", "scripts", "build-static.sh"), out)
	cmd.Env = append(os.Environ(), "VERSION="+version, "COMMIT="+commit, "CGO_ENABLED=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/build-static.sh: %v\n%s", err, b)
	}
	return out
}

func TestBuildStaticBinaryServesHealthz(t *testing.T) {
	t.Parallel()
	// CGO_ENABLED=1 in the caller's environment: the script must turn it off.
	bin := buildStatic(t, "v9.8.7-test", "0123456789ab")

	// Static: no interpreter, no dynamic section, no symbols or DWARF.
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("binary has a %s program header: it is dynamically linked", p.Type)
		}
	}
	for _, s := range ef.Sections {
		if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug_") || s.Name == ".dynamic" {
			t.Errorf("binary has section %s (want -ldflags -s -w and no dynamic linking)", s.Name)
		}
	}
	ef.Close()
	if out, err := exec.Command("file", bin).CombinedOutput(); err != nil || !bytes.Contains(out, []byte("statically linked")) {
		t.Errorf("file says the binary is not statically linked (err %v): %s", err, out)
	}
	if out, err := exec.Command("ldd", bin).CombinedOutput(); err == nil || !(bytes.Contains(out, []byte("not a dynamic executable")) || bytes.Contains(out, []byte("statically linked"))) {
		t.Errorf("ldd does not say the binary is static (err %v): %s", err, out)
	}
	// -trimpath: no path of this machine in the binary.
	root, _ := filepath.Abs("..")
	if b, err := os.ReadFile(bin); err != nil || bytes.Contains(b, []byte(root+"/")) {
		t.Errorf("binary holds the build path %s: -trimpath missing (err %v)", root, err)
	}
	// The stamped version reaches main.version, main.commit and main.date.
	out, err := exec.Command(bin, "version").Output()
	if err != nil || string(out) != "v9.8.7-test\n" {
		t.Errorf("delaybridge version: want the stamped tag v9.8.7-test, got %q (err %v)", out, err)
	}
	out, err = exec.Command(bin, "version", "--json").Output()
	var info struct{ Version, Commit, Date, GoVersion string }
	if err == nil {
		err = json.Unmarshal(out, &info)
	}
	if _, perr := time.Parse(time.RFC3339, info.Date); err != nil || perr != nil || info.Version != "v9.8.7-test" || info.Commit != "0123456789ab" || !strings.HasPrefix(info.GoVersion, "go") {
		t.Errorf("delaybridge version --json: want the stamped version, commit, an RFC 3339 build date and the Go version, got %s (err %v)", out, err)
	}

	runAndStop(t, bin)
}
