package chaos

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The ACL that docs/operations-security.md tells operators to create is the
// one TestRedisOverTLSWithAPrefixACLUser proves the daemon works with.
func TestDocumentedACLIsTheTestedOne(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../docs/operations-security.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "ACL SETUSER delaybridge")
	if start < 0 {
		t.Fatal("docs/operations-security.md has no `ACL SETUSER delaybridge` block")
	}
	block := doc[start:]
	block = block[:strings.Index(block, "```")]
	var documented []string
	for _, m := range regexp.MustCompile(`\s\+([a-z|]+)`).FindAllStringSubmatch(block, -1) {
		documented = append(documented, m[1])
	}
	tested := slices.Clone(daemonCommands)
	slices.Sort(documented)
	slices.Sort(tested)
	if diff := cmp.Diff(tested, documented); diff != "" {
		t.Errorf("the ACL in docs/operations-security.md differs from the one tested (-tested +documented):\n%s", diff)
	}
	for _, want := range []string{"~dq:*", "&dq:wake", "-@all"} {
		if !strings.Contains(block, want) {
			t.Errorf("the documented ACL lacks %s", want)
		}
	}

	// Every command the daemon's scripts call is granted, including those
	// of paths the end-to-end test may not take (release, extend, +inf).
	for cmd, file := range scriptCommands(t) {
		if !slices.Contains(daemonCommands, cmd) {
			t.Errorf("a script in queue/%s calls %s, which the daemon's ACL does not grant: add it to daemonCommands and to docs/operations-security.md", file, strings.ToUpper(cmd))
		}
	}
}

// producerScripts hold the scripts only producers and operators run (the
// Go producer API, the CLI's dead-set, inspection and pause commands, a
// key's pause and rate), never the daemon.
var producerScripts = []string{"schedule.go", "cancel.go", "reschedule.go", "lookup.go", "requeue.go", "purge.go",
	"pause.go", "list.go", "inspect.go", "limits.go", "recur.go", "fairpause.go", "fairrate.go"}

// scriptCommands finds the commands that the Lua scripts in queue/ call,
// except producers' scripts, with a file that calls each.
func scriptCommands(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("../queue/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("read queue/: %v", err)
	}
	call := regexp.MustCompile(`redis\.p?call\(\s*['"]([A-Za-z]+)['"]`)
	out := map[string]string{}
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasSuffix(name, "_test.go") || slices.Contains(producerScripts, name) {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			out[strings.ToLower(m[1])] = name
		}
	}
	if len(out) == 0 {
		t.Fatal("found no redis.call in queue/: has the pattern changed?")
	}
	return out
}
