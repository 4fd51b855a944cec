package e2etest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// BuildRelease builds the daemon of an earlier release from this
// repository's own history: it extracts commit with `git archive | tar -x`
// into a temporary folder and builds its cmd/delaybridge offline
// (GOPROXY=off, GOFLAGS=-mod=mod), from the module cache. A dependency of
// the release that the cache does not hold, where this build requires the
// same module at another version, is built at this build's version (logged;
// golang.org/x patch releases in practice). Without the commit (a shallow
// clone, an export without .git) the test fails: it does not skip.
func BuildRelease(tb testing.TB, commit string) string {
	tb.Helper()
	root := gitRoot(tb)
	if out, err := runIn(root, nil, "git", "cat-file", "-t", commit+"^{commit}"); err != nil || strings.TrimSpace(out) != "commit" {
		shallow, _ := runIn(root, nil, "git", "rev-parse", "--is-shallow-repository")
		tb.Fatalf("this test builds an earlier release from the repository's history, commit %s, and git does not have it "+
			"(shallow clone: %s; %v %s): fetch the full history (git fetch --unshallow) and run the test again",
			commit, strings.TrimSpace(shallow), err, strings.TrimSpace(out))
	}
	src := tb.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	untar.Stdin = pipe
	var aerr, terr bytes.Buffer
	archive.Stderr, untar.Stderr = &aerr, &terr
	if err := untar.Start(); err != nil {
		tb.Fatalf("tar: %v", err)
	}
	if err := archive.Run(); err != nil {
		tb.Fatalf("git archive %s: %v\n%s", commit, err, aerr.String())
	}
	if err := untar.Wait(); err != nil {
		tb.Fatalf("tar -x of git archive %s: %v\n%s", commit, err, terr.String())
	}
	alignModules(tb, root, src)
	bin := filepath.Join(tb.TempDir(), "delaybridge-"+commit[:12])
	offline := []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "CGO_ENABLED=0"}
	if out, err := runIn(src, offline, "go", "build", "-trimpath", "-o", bin, "./cmd/delaybridge"); err != nil {
		tb.Fatalf("build commit %s offline (GOPROXY=off GOFLAGS=-mod=mod, from the module cache): %v\n%s", commit, err, out)
	}
	return bin
}

// alignModules raises each requirement of the extracted release's go.mod
// that the module cache lacks to this build's version of the module, and
// gives the release this build's go.sum lines for them. A requirement this
// build does not share fails the test, naming it.
func alignModules(tb testing.TB, root, src string) {
	tb.Helper()
	cache, err := runIn(root, nil, "go", "env", "GOMODCACHE")
	if err != nil {
		tb.Fatalf("go env GOMODCACHE: %v", err)
	}
	cache = strings.TrimSpace(cache)
	old, current := requirements(tb, src), requirements(tb, root)
	var raise []string
	for path, v := range old {
		if _, err := os.Stat(filepath.Join(cache, "cache", "download", escapeModule(path), "@v", v+".zip")); err == nil {
			continue
		}
		now, ok := current[path]
		if !ok {
			tb.Fatalf("the release needs %s@%s: the module cache lacks it and this build does not require the module (go mod download it)", path, v)
		}
		tb.Logf("the release's %s@%s is not in the module cache: built with this build's %s", path, v, now)
		raise = append(raise, "-require="+path+"@"+now)
	}
	if len(raise) == 0 {
		return
	}
	if out, err := runIn(src, nil, "go", append([]string{"mod", "edit"}, raise...)...); err != nil {
		tb.Fatalf("go mod edit %v: %v\n%s", raise, err, out)
	}
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		tb.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(src, "go.sum"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := f.Write(sums); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// requirements reads the require lines of dir's go.mod: path → version.
func requirements(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	out, err := runIn(dir, nil, "go", "mod", "edit", "-json")
	if err != nil {
		tb.Fatalf("go mod edit -json in %s: %v\n%s", dir, err, out)
	}
	var mod struct {
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal([]byte(out), &mod); err != nil {
		tb.Fatalf("go mod edit -json in %s: %v", dir, err)
	}
	req := make(map[string]string, len(mod.Require))
	for _, r := range mod.Require {
		req[r.Path] = r.Version
	}
	return req
}

// escapeModule is a module path as the module cache spells it: each
// upper-case letter as '!' and its lower case.
func escapeModule(path string) string {
	var b strings.Builder
	for _, r := range path {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// gitRoot is the top of the working tree the test runs in.
func gitRoot(tb testing.TB) string {
	tb.Helper()
	out, err := runIn(".", nil, "git", "rev-parse", "--show-toplevel")
	if err != nil {
		tb.Fatalf("this test builds an earlier release from the repository's history, and git finds no repository here: %v\n%s", err, out)
	}
	return strings.TrimSpace(out)
}

// runIn runs name args in dir with env added to the test's environment and
// returns its standard output (and error output, on failure).
func runIn(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}
