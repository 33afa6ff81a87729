package brainsurgeon_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// rootPath is the import path of the root package.
const rootPath = "github.com/brainsurgeon/brainsurgeon"

// TestEveryInterfaceHasAConsumer checks that every exported interface the
// root package declares is named by at least one non-test file of
// another package of the module: an interface nothing outside the root
// uses is not part of the seam and does not belong here.
func TestEveryInterfaceHasAConsumer(t *testing.T) {
	fset := token.NewFileSet()
	declared := map[string]bool{}
	roots, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range roots {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if _, ok := ts.Type.(*ast.InterfaceType); ok && ts.Name.IsExported() {
					declared[ts.Name.Name] = true
				}
			}
		}
	}
	if len(declared) == 0 {
		t.Fatal("no exported interface found in the root package's files")
	}

	used := map[string][]string{} // interface → files outside the root that name it
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == "." {
				return nil
			}
			base := d.Name()
			if base == "vendor" || base == "testdata" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if filepath.Dir(path) == "." || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		alias := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == rootPath {
				alias = "brainsurgeon"
				if imp.Name != nil {
					alias = imp.Name.Name
				}
			}
		}
		if alias == "" || alias == "_" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == alias && declared[sel.Sel.Name] {
				used[sel.Sel.Name] = append(used[sel.Sel.Name], path)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range declared {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if len(used[name]) == 0 {
			t.Errorf("interface %s is declared in the root package but no non-test file of another package uses it: expected a consumer outside the root, or the interface moves to the package that uses it", name)
		} else {
			t.Logf("%s: used by %d files (%s, …)", name, len(used[name]), used[name][0])
		}
	}
}
