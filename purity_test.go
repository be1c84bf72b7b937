package statesim

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The core packages are pure state machines: no wall clock, no global RNG,
// no I/O. A static check, so a regression fails here before it shows up as
// a flaky byte comparison.
func TestCorePackagesArePure(t *testing.T) {
	banned := map[string]string{
		"time":          "the wall clock (use sim.Time)",
		"math/rand":     "the global RNG (use sim.Streams)",
		"os":            "I/O",
		"net":           "I/O",
		"io/ioutil":     "I/O",
		"crypto/rand":   "an unseeded RNG",
		"sync":          "goroutine timing",
		"unsafe":        "memory layout tricks",
		"runtime":       "scheduler-dependent behaviour",
		"path/filepath": "I/O",
	}
	// rand/v2's package-level functions draw from a global, randomly
	// seeded source; only explicitly seeded generators are allowed.
	allowedRand := map[string]bool{"New": true, "NewPCG": true, "Rand": true, "PCG": true, "Source": true}
	for _, dir := range []string{"sim", "sched", "statecache"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		if len(files) == 0 {
			t.Fatalf("no files in %s", dir)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			randName := ""
			for _, imp := range file.Imports {
				path := strings.Trim(imp.Path.Value, `"`)
				if why, bad := banned[path]; bad {
					t.Errorf("%s imports %s: %s", f, path, why)
				}
				if path == "math/rand/v2" {
					randName = "rand"
					if imp.Name != nil {
						randName = imp.Name.Name
					}
				}
			}
			if randName == "" {
				continue
			}
			full, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(full, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == randName && !allowedRand[sel.Sel.Name] {
						t.Errorf("%s: %s.%s draws from rand/v2's global source", fset.Position(sel.Pos()), randName, sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
}
