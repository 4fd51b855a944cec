package layout

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A code comment that names a document names one a reader who cloned the
// repository can open: README.md, CHANGELOG.md, docs/*.md, a package's
// README, all in the tree. A contract kept outside it (a design page that
// only some sessions could read) is what this test refuses; URLs are not
// documents of the tree and are left alone.

var (
	// mdRef is a path to a Markdown document as a comment writes it.
	mdRef = regexp.MustCompile(`[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md\b`)
	// urlRef is a URL, whose path is no file of the tree.
	urlRef = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://\S+`)
)

// missingDocs returns the Markdown paths text names that exist neither
// relative to the module root, nor to dir (the commented file's directory,
// relative to root), nor, for a bare name, under docs/.
func missingDocs(root, dir, text string) []string {
	var missing []string
	for _, ref := range mdRef.FindAllString(urlRef.ReplaceAllString(text, ""), -1) {
		candidates := []string{filepath.Join(root, ref), filepath.Join(root, dir, ref)}
		if !strings.Contains(ref, "/") {
			candidates = append(candidates, filepath.Join(root, "docs", ref))
		}
		found := false
		for _, c := range candidates {
			if fileExists(c) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, ref)
		}
	}
	return missing
}

func TestCommentsNameOnlyDocumentsOfTheTree(t *testing.T) {
	root := filepath.Join("..", "..")
	files := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		files++
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, g := range f.Comments {
			for _, ref := range missingDocs(root, dir, g.Text()) {
				t.Errorf("%s: a comment names %s, which is not in the repository: cite docs/architecture.md (by section) or a package doc", fset.Position(g.Pos()), ref)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 200 {
		t.Fatalf("read only %d Go files: the test no longer finds the module", files)
	}
}

// TestMissingDocsRefusesADocumentOutsideTheTree keeps missingDocs able to
// fail: a comment citing a design page outside the tree, or a docs page that
// does not exist, is
// refused; the documents of the tree and URLs pass.
func TestMissingDocsRefusesADocumentOutsideTheTree(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, bad := range []string{
		"the contract (DESIGN.md, guarantee 9)",
		"see DESIGN.md.",
		"as docs/design.md says",
		"docs/architecture.md and docs/nowhere.md",
	} {
		if got := missingDocs(root, "queue", bad); len(got) != 1 {
			t.Errorf("missingDocs(%q) = %q, want the one document outside the tree", bad, got)
		}
	}
	for _, good := range []string{
		"docs/architecture.md, Guarantees 9",
		"see README.md and CHANGELOG.md",
		"the table in ../docs/configuration.md",
		"performance.md",
		"https://example.com/DESIGN.md",
		"no document at all",
	} {
		if got := missingDocs(root, "config", good); len(got) != 0 {
			t.Errorf("missingDocs(%q) = %q, want none", good, got)
		}
	}
}
