package layout

import (
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// module is the import path of the module whose packages the test walks.
const module = "github.com/delaybridge/delaybridge"

// tooling is the rank of what only tests, benches and generators use: it may
// import any product package and any other tool, and no product package may
// import it.
const tooling = 9

// ranks place every package of the module on a floor. The data flows one
// way, queue → forwarder → sinks, and an import only runs down: a product
// package imports packages of a lower floor only, so peers on one floor
// (forwarder, intake, config, console, the sink adapters) never import each
// other, and nothing imports cmd. A path ending in "/..." names the
// sub-packages under it; the longest match wins.
var ranks = []struct {
	path string
	rank int
}{
	// Helpers the product imports: nothing of the module below them.
	{"internal/backoff", 0},
	{"internal/rawio", 0},
	{"internal/procs", 0},
	{"internal/logrepeat", 0},
	{"internal/tracing", 0},
	{"internal/luakeys", 0},
	// The member format of envelope topics: no Redis, no other package.
	{"envelope", 0},
	// A recurrence's spec and zone: no Redis.
	{"internal/recurspec", 0},
	// The data model and the sink contract.
	{"queue", 1},
	{"sinks", 1},
	// Membership: the replicas' heartbeats, the served reports, who owns
	// which slot; over the queue's Redis and key names, below everything
	// that applies or shows it.
	{"membership", 2},
	// Flow control's shared state in Redis, on the queue's topics and keys
	// (queue.FlowKeys): below the forwarder that obeys it and the CLI and
	// console that show it, and free of their words.
	{"flowstate", 3},
	// What flow control says to people, once for the CLI and the console;
	// the configuration behind a refusal or a warning, once for every
	// surface (queue and membership name no variable).
	{"internal/flowtext", 4},
	{"internal/opstext", 4},
	// What uses them: the pipeline, the intake, the configuration, the
	// console and the HTTP API (queue and flowstate only: never the
	// forwarder), the sink adapters (sinks, never forwarder).
	{"forwarder", 5},
	{"intake", 5},
	{"config", 5},
	{"console", 5},
	{"api", 5},
	{"sinks/...", 5},
	// Connecting as the configuration says (it reads config).
	{"redisclient", 6},
	// The binary's commands: the daemon's wiring and the CLI.
	{"internal/cli", 7},
	// main packages: wiring only.
	{"cmd/...", 8},
	// Test tooling, benches, examples and generators.
	{"internal/testing/...", tooling},
	{"internal/layout", tooling},
	{"config/internal/gendoc", tooling},
	{"bench", tooling},
	{"chaos", tooling},
	{"cluster", tooling},
	{"e2e", tooling},
	{"examples/...", tooling},
}

// rankOf returns the floor of a package path relative to the module root;
// ok is false for a package the table does not place.
func rankOf(pkg string) (rank int, ok bool) {
	best := -1
	for _, r := range ranks {
		match := pkg == r.path
		if base, sub := strings.CutSuffix(r.path, "/..."); sub {
			match = strings.HasPrefix(pkg, base+"/")
		}
		if match && len(r.path) > best {
			best, rank, ok = len(r.path), r.rank, true
		}
	}
	return rank, ok
}

// importAllowed says whether package from may import package to (both
// relative to the module root) and, if not, why.
func importAllowed(from, to string) (bool, string) {
	rf, okf := rankOf(from)
	rt, okt := rankOf(to)
	switch {
	case !okf || !okt:
		return false, "a package the layout test does not place: add it to ranks"
	case to == "cmd" || strings.HasPrefix(to, "cmd/"):
		return false, "nothing imports cmd: it only wires"
	case rt == tooling && rf != tooling:
		return false, "the product never imports test tooling"
	case rf == tooling:
		return true, ""
	case rt >= rf:
		return false, "an import runs back up or across a floor: move the helper down"
	}
	return true, ""
}

func TestImportsRunDownTheFloors(t *testing.T) {
	root := filepath.Join("..", "..")
	graph, err := moduleImports(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(graph) < 20 {
		t.Fatalf("found only %d packages: the test no longer finds them", len(graph))
	}
	for from, tos := range graph {
		for _, to := range tos {
			if ok, why := importAllowed(from, to); !ok {
				t.Errorf("%s imports %s: %s", from, to, why)
			}
		}
	}
}

// TestImportRuleRefusesTheArrowsTheDesignForbids keeps importAllowed strict:
// each of these imports would be a fault.
func TestImportRuleRefusesTheArrowsTheDesignForbids(t *testing.T) {
	for _, bad := range [][2]string{
		{"console", "forwarder"},
		{"queue", "forwarder"},
		{"queue", "sinks"},
		{"envelope", "queue"},
		{"queue", "membership"},
		{"membership", "forwarder"},
		{"queue", "config"},
		{"sinks", "queue"},
		{"sinks/amqp", "forwarder"},
		{"sinks/kafka", "sinks/amqp"},
		{"forwarder", "config"},
		{"config", "redisclient"},
		{"queue", "redisclient"},
		{"forwarder", "console"},
		{"internal/backoff", "queue"},
		{"forwarder", "cmd/delaybridge"},
		{"internal/cli", "cmd/delaybridge"},
		{"forwarder", "internal/cli"},
		{"console", "internal/cli"},
		{"queue", "internal/testing/redistest"},
		{"forwarder", "a/package/nobody/placed"},
		{"queue", "flowstate"},
		{"flowstate", "forwarder"},
		{"flowstate", "internal/flowtext"},
		{"flowstate", "config"},
		{"internal/flowtext", "console"},
		{"sinks", "flowstate"},
		{"queue", "internal/opstext"},
		{"membership", "internal/opstext"},
	} {
		if ok, _ := importAllowed(bad[0], bad[1]); ok {
			t.Errorf("importAllowed(%s -> %s) = true, want false", bad[0], bad[1])
		}
	}
	for _, good := range [][2]string{
		{"forwarder", "queue"},
		{"forwarder", "sinks"},
		{"sinks/amqp", "sinks"},
		{"console", "queue"},
		{"cmd/delaybridge", "forwarder"},
		{"internal/testing/e2etest", "sinks"},
		{"flowstate", "queue"},
		{"forwarder", "flowstate"},
		{"console", "flowstate"},
		{"console", "internal/flowtext"},
		{"cmd/delaybridge", "internal/flowtext"},
		{"cmd/delaybridge", "internal/cli"},
		{"api", "internal/opstext"},
		{"forwarder", "internal/opstext"},
		{"internal/cli", "forwarder"},
		{"internal/cli", "redisclient"},
	} {
		if ok, why := importAllowed(good[0], good[1]); !ok {
			t.Errorf("importAllowed(%s -> %s) = false (%s), want true", good[0], good[1], why)
		}
	}
}

// moduleImports maps every package directory of the module (relative to
// root, nested modules such as deploy/ left out) to the module packages its
// non-test files import.
func moduleImports(root string) (map[string][]string, error) {
	graph := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a test's temporary package, removed while we walked
			}
			return err
		}
		if d.IsDir() {
			name := d.Name()
			// The go command ignores directories that start with "." or "_":
			// a test of another package (gosnippet) writes its temporary
			// package as queue/_snippet…, which may appear while we walk.
			skip := strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata"
			if path != root && (skip || fileExists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if _, seen := graph[pkg]; !seen {
			graph[pkg] = nil
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if to, ok := strings.CutPrefix(p, module+"/"); ok && !contains(graph[pkg], to) {
				graph[pkg] = append(graph[pkg], to)
			}
		}
		return nil
	})
	for _, tos := range graph {
		sort.Strings(tos)
	}
	return graph, err
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
