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

// wordless are the packages whose strings name no DELAYBRIDGE_* variable:
// they report in the Go API's terms, which a program that never set a
// variable reads too; internal/opstext names the variable for people
// (issue #48: wording for people out of queue).
var wordless = []string{"queue", "membership", "flowstate"}

func TestDataPackagesNameNoVariableInTheirWords(t *testing.T) {
	root := filepath.Join("..", "..")
	files := 0
	for _, pkg := range wordless {
		entries, err := os.ReadDir(filepath.Join(root, pkg))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			files++
			path := filepath.Join(root, pkg, name)
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.Contains(lit.Value, "DELAYBRIDGE_") {
					t.Errorf("%s: a string names a DELAYBRIDGE_ variable: say it in internal/opstext (or flowtext), where people read it", fset.Position(lit.Pos()))
				}
				return true
			})
		}
	}
	if files < 40 {
		t.Fatalf("read only %d files of %v: the test no longer finds the packages", files, wordless)
	}
}
