package forwarder

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocNamesEveryFile: the package doc's file map (forwarder.go)
// names every non-test file of the package, so a file added without a
// line there fails here.
func TestPackageDocNamesEveryFile(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "forwarder.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("forwarder.go has no package doc")
	}
	doc := f.Doc.Text()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if !strings.Contains(doc, name) {
			t.Errorf("the package doc's file map does not name %s", name)
		}
	}
}
