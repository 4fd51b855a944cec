package layout

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docMapped are the packages whose package doc is a map of their files: it
// names every non-test .go file ("claim.go"), so a newcomer can trust it. A
// package with no map is not listed; one with a map must keep it true.
var docMapped = []string{
	"queue",
	"flowstate",
	"internal/flowtext",
	"sinks/amqp",
}

func TestPackageDocsMapEveryFile(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, pkg := range docMapped {
		missing, err := unmappedFiles(filepath.Join(root, filepath.FromSlash(pkg)))
		if err != nil {
			t.Errorf("%s: %v", pkg, err)
			continue
		}
		for _, name := range missing {
			t.Errorf("%s: %s is missing from the package doc's file map: name it there and say what it holds", pkg, name)
		}
	}
}

// TestUnmappedFilesFindsAFileTheDocDoesNotName keeps unmappedFiles able to
// fail: a name that only ends like a mapped one ("bin.go" in
// "envelopebin.go") is no mention.
func TestUnmappedFilesFindsAFileTheDocDoesNotName(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"doc.go":         "// Package p. Files: claim.go and envelopebin.go.\npackage p\n",
		"claim.go":       "package p\n",
		"envelopebin.go": "package p\n",
		"bin.go":         "package p\n",
		"reap.go":        "package p\n",
		"reap_test.go":   "package p\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := unmappedFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"bin.go", "reap.go"}; !slices.Equal(got, want) {
		t.Errorf("unmappedFiles = %v, want %v", got, want)
	}
}

// unmappedFiles returns, sorted, the non-test .go files of dir that no
// package doc comment of dir names; doc.go, which holds the map, need not
// name itself.
func unmappedFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	var doc strings.Builder
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if name != "doc.go" {
			names = append(names, name)
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if f.Doc != nil {
			doc.WriteString(f.Doc.Text())
			doc.WriteByte('\n')
		}
	}
	if doc.Len() == 0 {
		return nil, fmt.Errorf("%s has no package doc", dir)
	}
	var missing []string
	for _, name := range names {
		mention := regexp.MustCompile(`(^|[^\w./-])` + regexp.QuoteMeta(name) + `($|[^\w])`)
		if !mention.MatchString(doc.String()) {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	return missing, nil
}
