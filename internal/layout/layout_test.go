// Package layout holds the test that keeps the product's code readable in
// one sitting: no function longer than a screen, no file longer than a few
// hundred lines, in the packages a newcomer reads first.
package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	// maxFuncLines is a function that fits on a screen.
	maxFuncLines = 70
	// maxFileLines is a file read in one sitting.
	maxFileLines = 400
)

// checked are the directories (relative to the module root, with their
// sub-packages) whose non-test Go files the limits apply to.
var checked = []string{"cmd", "internal/cli", "config", "forwarder", "queue", "sinks", "intake", "console", "redisclient", "bench"}

func TestFunctionsAndFilesFitOnAScreen(t *testing.T) {
	root := filepath.Join("..", "..")
	files := 0
	for _, dir := range checked {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if os.IsNotExist(err) && path == filepath.Join(root, dir) {
				return filepath.SkipDir // a package that does not exist yet
			}
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			files++
			checkFile(t, path)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 50 {
		t.Fatalf("checked only %d files: the test no longer finds the packages", files)
	}
}

func checkFile(t *testing.T, path string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
		t.Errorf("%s has %d lines (at most %d): split it by concept", path, n, maxFileLines)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			return true
		}
		lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
		if lines > maxFuncLines {
			t.Errorf("%s: %s has %d lines (at most %d)", fset.Position(fn.Pos()), fn.Name.Name, lines, maxFuncLines)
		}
		return false
	})
}
