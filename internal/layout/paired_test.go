package layout

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	// largerFile is the size (lines) above which a file of queue or
	// forwarder is one of the "larger files" that should have a test file
	// of its own (issue #48: 61 of them when it was written).
	largerFile = 80
	// minPaired is the share of larger files that must have one.
	minPaired = 0.80
)

// paired are the packages whose larger files are paired with tests.
var paired = []string{"queue", "forwarder"}

// TestLargerFilesHaveATestFileOfTheirOwn: at least minPaired of the larger
// non-test files of paired have x_test.go or x_<anything>_test.go beside
// x.go, so a newcomer finds a file's tests by its name.
func TestLargerFilesHaveATestFileOfTheirOwn(t *testing.T) {
	root := filepath.Join("..", "..")
	var larger, with int
	var without []string
	for _, pkg := range paired {
		dir := filepath.Join(root, pkg)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, e := range entries {
			names[e.Name()] = true
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Count(b, []byte("\n")) <= largerFile {
				continue
			}
			larger++
			if hasOwnTest(strings.TrimSuffix(name, ".go"), names) {
				with++
			} else {
				without = append(without, pkg+"/"+name)
			}
		}
	}
	if larger < 20 {
		t.Fatalf("found only %d larger files: the test no longer finds the packages", larger)
	}
	if share := float64(with) / float64(larger); share < minPaired {
		t.Errorf("%d of %d larger files (%.0f%%) have a test file of their own, want at least %.0f%%; without: %s",
			with, larger, share*100, minPaired*100, strings.Join(without, ", "))
	}
}

// hasOwnTest reports whether names holds base_test.go or base_*_test.go.
func hasOwnTest(base string, names map[string]bool) bool {
	if names[base+"_test.go"] {
		return true
	}
	for n := range names {
		if strings.HasPrefix(n, base+"_") && strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}
