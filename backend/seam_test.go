package backend_test

import (
	"go/ast"
	"go/types"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// module is the module's import path.
const module = "github.com/brainsurgeon/brainsurgeon"

// backends are the packages that may read SessionRef.Path: the stores
// that make the refs, the side store (it places side directories by the
// transcript's location) and backend, which assembles them.
var backends = []string{"session", "session/sqlite", "sidedir", "sides3", "backend", "sidemigrate"}

// policies are the packages that must not depend on a backend: they see
// only the root interfaces, and cmd/brainsurgeon wires the backends in.
var policies = []string{"extract", "restore", "compact", "prune", "retention", "recall", "summarize", "daemon", "trash", "api", "engine", "doctor", "agenttools",
	"portable", "internal/agenttext", "internal/compactwire", "internal/demo"}

// presentation are the packages that wire backends to policy and show
// them (docs/ARCHITECTURE.md, "Layers"): no policy package may depend on
// one, so that the binary hands the web UI to the API and the daemon
// reaches no presentation. The commands under cmd/ are main packages,
// which nothing can import.
var presentation = []string{"api/ui", "internal/cli", "internal/openclawinstall", "internal/piinstall", "internal/service", "internal/wiring"}

// helpers are the packages below both (docs/ARCHITECTURE.md, "Layers"):
// every backend and every policy package may import them, so they must
// depend on neither a backend nor a policy package.
var helpers = []string{"entry", "tokens", "config", "duration", "audit",
	"internal/jsonedit", "internal/hostfile", "internal/atomicfile", "internal/logging", "internal/memlimit",
	"internal/hostconfig", "internal/synth", "internal/plural"}

// unlayered are the module's packages outside the layers: the commands
// (main packages, which nothing imports), the live tests, the examples,
// the test harnesses and the plugin's embedded files.
var unlayered = []string{"cmd", "e2e", "examples", "internal/testkit", "openclaw-plugin"}

// inside reports whether the package path is rel or one of its
// subpackages.
func inside(path, rel string) bool {
	full := module + "/" + rel
	return path == full || strings.HasPrefix(path, full+"/")
}

// TestSeam proves the seam between the backends and the rest: no package
// outside the backends reads SessionRef.Path (found with exact type
// information, so that an unrelated Path field does not count and an
// embedded or aliased SessionRef does), and no policy package imports a
// backend or a presentation package, directly or through another package,
// and no helper imports a backend or a policy package.
func TestSeam(t *testing.T) {
	if testing.Short() {
		t.Skip("loads and type-checks the whole module")
	}
	// The module's packages are type-checked from source; their dependencies outside the module come from the
	// build's export data (no NeedDeps: type-checking the dependencies from source took most of this test's 30 s).
	// The import graph is complete either way (NeedImports).
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedImports | packages.NeedTypes |
			packages.NeedSyntax | packages.NeedTypesInfo,
		Dir: "..",
	}
	pkgs, err := packages.Load(cfg, module+"/...")
	if err != nil {
		t.Fatal(err)
	}
	var root *types.Package
	byPath := map[string]*packages.Package{}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		byPath[p.PkgPath] = p
		if p.PkgPath == module {
			root = p.Types
		}
	})
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("load %s: %v", p.PkgPath, e)
		}
	}
	if root == nil {
		t.Fatalf("the root package %s was not loaded", module)
	}
	ref := root.Scope().Lookup("SessionRef")
	if ref == nil {
		t.Fatal("the root package has no SessionRef")
	}
	isRef := func(t types.Type) bool {
		if p, ok := types.Unalias(t).(*types.Pointer); ok {
			t = p.Elem()
		}
		n, ok := types.Unalias(t).(*types.Named)
		return ok && n.Obj() == ref
	}

	t.Run("SessionRefPath", func(t *testing.T) {
		var found []string
		for _, p := range pkgs {
			if !strings.HasPrefix(p.PkgPath, module) || slices.ContainsFunc(backends, func(b string) bool { return inside(p.PkgPath, b) }) {
				continue
			}
			for _, f := range p.Syntax {
				ast.Inspect(f, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok || sel.Sel.Name != "Path" {
						return true
					}
					s := p.TypesInfo.Selections[sel]
					if s == nil || s.Kind() != types.FieldVal {
						return true
					}
					// The field's owner: the receiver, or the struct that
					// embeds SessionRef on the way to Path.
					owner := s.Recv()
					if idx := s.Index(); len(idx) > 1 {
						st, _ := types.Unalias(derefType(owner)).Underlying().(*types.Struct)
						for _, i := range idx[:len(idx)-1] {
							if st == nil {
								break
							}
							owner = st.Field(i).Type()
							st, _ = types.Unalias(derefType(owner)).Underlying().(*types.Struct)
						}
					}
					if isRef(owner) {
						found = append(found, p.Fset.Position(sel.Sel.Pos()).String())
					}
					return true
				})
			}
		}
		sort.Strings(found)
		for _, f := range found {
			t.Errorf("%s reads SessionRef.Path outside the backends (%s): ask the store instead", f, strings.Join(backends, ", "))
		}
	})

	// forbidden reports every package of kind kind (named by rel) that
	// depends on one of the packages banned, directly or through another.
	forbidden := func(t *testing.T, kind string, rels []string, bannedKind string, banned []string) {
		t.Helper()
		for _, rel := range rels {
			p := byPath[module+"/"+rel]
			if p == nil {
				t.Errorf("%s package %s was not loaded", kind, rel)
				continue
			}
			seen := map[string]bool{}
			var walk func(p *packages.Package, via []string)
			walk = func(p *packages.Package, via []string) {
				for _, imp := range p.Imports {
					if seen[imp.PkgPath] {
						continue
					}
					seen[imp.PkgPath] = true
					chain := append(slices.Clone(via), strings.TrimPrefix(imp.PkgPath, module+"/"))
					for _, b := range banned {
						if imp.PkgPath == module+"/"+b {
							t.Errorf("%s package %s depends on the %s %s (through %s)", kind, rel, bannedKind, b, strings.Join(chain, " → "))
						}
					}
					walk(imp, chain)
				}
			}
			walk(p, []string{rel})
		}
	}

	t.Run("PolicyImports", func(t *testing.T) {
		forbidden(t, "policy", policies, "backend", backends)
		forbidden(t, "policy", policies, "presentation package", presentation)
	})

	// Every package of the module is in one layer (the root is the seam
	// itself), so that a new package is placed, and checked, on purpose.
	t.Run("Classified", func(t *testing.T) {
		for _, p := range pkgs {
			rel := strings.TrimPrefix(strings.TrimPrefix(p.PkgPath, module), "/")
			if rel == "" || strings.HasSuffix(p.PkgPath, ".test") || strings.HasSuffix(p.PkgPath, "_test") {
				continue
			}
			if slices.ContainsFunc(unlayered, func(u string) bool { return inside(p.PkgPath, u) }) {
				continue
			}
			var in []string
			for kind, rels := range map[string][]string{"backends": backends, "policies": policies, "presentation": presentation, "helpers": helpers} {
				if slices.Contains(rels, rel) {
					in = append(in, kind)
				}
			}
			if len(in) != 1 {
				t.Errorf("package %s is in %d layers %v of backend/seam_test.go, expected exactly one (docs/ARCHITECTURE.md, \"Layers\")", rel, len(in), in)
			}
		}
	})

	t.Run("HelperImports", func(t *testing.T) {
		forbidden(t, "helper", helpers, "backend", backends)
		forbidden(t, "helper", helpers, "policy package", policies)
	})
}

// derefType returns the element type of a pointer, else t.
func derefType(t types.Type) types.Type {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}
