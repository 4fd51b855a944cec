package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestDocsShowTheRecordedResults: docs/performance.md shows the table of
// bench/results.json (README.md links to it), as `go run ./bench -markdown
// bench/results.json` renders it; a new run recorded without its table (or
// a table edited by hand) fails here.
func TestDocsShowTheRecordedResults(t *testing.T) {
	var table bytes.Buffer
	if err := printMarkdown(&table, "results.json"); err != nil {
		t.Fatalf("render results.json: %v", err)
	}
	for _, doc := range []string{"../docs/performance.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), table.String()) {
			t.Errorf("%s does not show the table of bench/results.json; paste the output of\n  go run ./bench -markdown bench/results.json\n%s", doc, table.String())
		}
	}
}
