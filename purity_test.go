package statesim

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// What a deterministic package may never import, and why.
var nondeterministic = map[string]string{
	"time":        "the wall clock (use sim.Time)",
	"math/rand":   "the global RNG (use sim.Streams)",
	"crypto/rand": "an unseeded RNG",
	"os":          "I/O",
	"net":         "I/O",
	"io/ioutil":   "I/O",
	"sync":        "goroutine timing",
	"runtime":     "scheduler-dependent behaviour",
	"unsafe":      "memory layout tricks",
}

// The core packages are pure state machines: no wall clock, no global RNG,
// no I/O. The engine drives them and may write to an io.Writer it is given,
// but reads no clock and no global RNG either. A static check, so a
// regression fails here before it shows up as a flaky byte comparison.
func TestCorePackagesArePure(t *testing.T) {
	for _, dir := range []string{"sim", "sched", "statecache"} {
		for _, e := range impurities(t, dir, map[string]string{"path/filepath": "I/O", "io": "I/O", "bufio": "I/O"}) {
			t.Error(e)
		}
	}
	for _, e := range impurities(t, "engine", nil) {
		t.Error(e)
	}
}

// The check itself can fail: a planted file that reads the clock and the
// global RNG is caught on both counts.
func TestPurityCheckCatchesImpurity(t *testing.T) {
	got := impurities(t, filepath.Join("testdata", "purity"), nil)
	if len(got) != 2 || !strings.Contains(got[0], "imports time") || !strings.Contains(got[1], "rand.IntN") {
		t.Fatalf("planted impurities not reported exactly: %q", got)
	}
}

// impurities lists the banned imports and global-RNG calls in dir's
// non-test files.
func impurities(t *testing.T, dir string, alsoBanned map[string]string) []string {
	t.Helper()
	var out []string
	// rand/v2's package-level functions draw from a global, randomly
	// seeded source; only explicitly seeded generators are allowed.
	allowedRand := map[string]bool{"New": true, "NewPCG": true, "Rand": true, "PCG": true, "Source": true}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	if len(files) == 0 {
		t.Fatalf("no files in %s", dir)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		randName := ""
		for _, imp := range file.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if why, bad := nondeterministic[path]; bad {
				out = append(out, fmt.Sprintf("%s imports %s: %s", f, path, why))
			}
			if why, bad := alsoBanned[path]; bad {
				out = append(out, fmt.Sprintf("%s imports %s: %s", f, path, why))
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
		ast.Inspect(file, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == randName && !allowedRand[sel.Sel.Name] {
					out = append(out, fmt.Sprintf("%s: %s.%s draws from rand/v2's global source", fset.Position(sel.Pos()), randName, sel.Sel.Name))
				}
			}
			return true
		})
	}
	return out
}
