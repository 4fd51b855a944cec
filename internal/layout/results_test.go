package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// maxResults is the most values a function of the product returns: a
// fourth is a params struct's job (riverdriver's XxxParams, membership.Beat), so
// a caller reads fields by name instead of a position among four.
const maxResults = 3

func TestNoFunctionReturnsMoreThanThreeValues(t *testing.T) {
	root := filepath.Join("..", "..")
	files := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || fileExists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		if rank, ok := rankOf(filepath.ToSlash(rel)); !ok || rank == tooling {
			return nil // tests, benches and tools; an unplaced package fails the import test
		}
		files++
		for _, msg := range manyResults(t, path) {
			t.Error(msg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("checked only %d files: the test no longer finds the product", files)
	}
}

// manyResults lists the functions, methods, literals and function types of
// the file at path that return more than maxResults values. A function
// whose doc says "Deprecated:" is left alone: it keeps an old signature for
// one minor version, beside the one that replaces it.
func manyResults(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	deprecated := map[*ast.FuncType]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncDecl:
			if x.Doc != nil && strings.Contains(x.Doc.Text(), "Deprecated:") {
				deprecated[x.Type] = true
			}
		case *ast.FuncType:
			if x.Results != nil && x.Results.NumFields() > maxResults && !deprecated[x] {
				out = append(out, fset.Position(x.Pos()).String()+": returns "+
					strconv.Itoa(x.Results.NumFields())+" values (at most 3): return a struct whose fields say what each is")
			}
		}
		return true
	})
	return out
}

// TestManyResultsFindsAFourthValue keeps manyResults able to fail, and
// shows what it leaves alone.
func TestManyResultsFindsAFourthValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.go")
	src := `package x

func three() (a, b int, err error) { return }
func four() (n, granted int, after, ok bool) { return }
var lit = func() (int, int, int, error) { return 0, 0, 0, nil }

// Old is kept for one minor version.
//
// Deprecated: use three.
func Old() (int, int, int, error) { return 0, 0, 0, nil }
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := manyResults(t, path); len(got) != 2 {
		t.Errorf("manyResults = %q, want four and the literal", got)
	}
}
