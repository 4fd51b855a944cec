package layout

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// docLimits are the documents a newcomer reads end to end, with the most
// lines each may have (issue #38): the README is what delaybridge is, why,
// the quick start, the concepts and where to go next, the reference moved
// to docs/; docs/performance.md is the method, the current numbers and what
// limits each, the dated runs staying in git.
var docLimits = map[string]int{
	"README.md":           450,
	"docs/performance.md": 500,
}

func TestDocsFitAReader(t *testing.T) {
	root := filepath.Join("..", "..")
	for doc, most := range docLimits {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\n")); n > most {
			t.Errorf("%s has %d lines, at most %d: move reference material to docs/ (and dated runs to git history) rather than adding it here", doc, n, most)
		}
	}
}
