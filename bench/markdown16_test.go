package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestDocsShowThe16CoreResults: docs/performance.md's 16-core section shows
// the first two tables (results, per-message costs) of `go run ./bench
// -markdown bench/results-16core.json`, so the file and the page cannot
// drift apart.
func TestDocsShowThe16CoreResults(t *testing.T) {
	var out bytes.Buffer
	if err := printMarkdown(&out, "results-16core.json"); err != nil {
		t.Fatalf("render results-16core.json: %v", err)
	}
	tables := strings.SplitN(out.String(), "\n\n", 3)
	if len(tables) < 2 {
		t.Fatalf("want at least two tables, got %d", len(tables))
	}
	want := tables[0] + "\n\n" + tables[1] + "\n"
	b, err := os.ReadFile("../docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), want) {
		t.Errorf("docs/performance.md does not show the first two tables of bench/results-16core.json; paste them from\n  go run ./bench -markdown bench/results-16core.json\n%s", want)
	}
}
