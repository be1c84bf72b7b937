package setup_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "statesim/backend/mock"
	"statesim/engine"
	"statesim/setup"
)

// One run settles its scenario once: vllm_version with its patches and
// mamba_cache_mode parsed once, one layout built (two in mamba_cache_mode
// all, whose block rounds to the kernel's chunk), whatever reads them
// afterwards (the engine, the scheduler, the cache, the backends, the
// report).
func TestOneRunParsesOnce(t *testing.T) {
	for _, c := range []struct {
		name    string
		sets    []string
		layouts int
	}{
		{"imposter", nil, 1},
		{"imposter-mock", nil, 1},
		{"nemotron-h-imposter", nil, 1},
		{"mooncake-hybrid", []string{"engine.enable_prefix_caching=true", "workload.limit=20"}, 2},
	} {
		counts := map[string]int{}
		stop := setup.CountParses(func(what string) { counts[what]++ })
		st, err := setup.Load(c.name, c.sets)
		if err == nil {
			_, err = engine.RunSetup(st, engine.Options{})
		}
		stop()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want := map[string]int{"vllm_version": 1, "mamba_cache_mode": 1, "layout": c.layouts}
		for k, n := range want {
			if counts[k] != n {
				t.Errorf("%s: %s parsed or built %d times in one run, want %d", c.name, k, counts[k], n)
			}
		}
	}
}

// The report states the index width in effect: Mamba2's kernels never
// form slot × stride in 32 bits, so state_index_bits 32 runs (and
// reports) 64 there and no slot wraps; Jamba's Mamba1 runs the 32 asked.
func TestReportPrintsTheWidthInEffect(t *testing.T) {
	for _, c := range []struct {
		name string
		bits int
		wrap bool
	}{{"nemotron-h-imposter", 64, false}, {"imposter", 32, true}} {
		st, err := setup.Load(c.name, []string{"engine.state_index_bits=32", "workload.num_prompts=128"})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := engine.RunSetup(st, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		rep.WriteText(&b)
		if rep.StateIndexBits != c.bits || !strings.Contains(b.String(), fmt.Sprintf("%d-bit state index", c.bits)) {
			t.Errorf("%s at state_index_bits 32: report says %d bits, want %d:\n%s", c.name, rep.StateIndexBits, c.bits, b.String())
		}
		if (rep.Cache.FirstWrappingSlot >= 0) != c.wrap {
			t.Errorf("%s: first wrapping slot %d, want wrapping %v", c.name, rep.Cache.FirstWrappingSlot, c.wrap)
		}
	}
}

// The settled values' parsers and the run's layout are called here only:
// below setup nothing parses them, above it everything reads a Setup.
// The defining packages, prop's search bounds and its classifier (a
// second opinion that re-derives on purpose), the command's flags, vLLM's
// command line (vllmargs reads a --version the way cmd/statesim reads its
// flags) and the known-bug table's release ranges (knownbugs: table data,
// not a scenario) are the exceptions.
func TestNothingElseParsesTheSetup(t *testing.T) {
	parsers := []string{"ParseVersion", "Patched", "ParseMambaCacheMode", "ResolveMambaCacheMode", "ParseRelease",
		"ParseRunner", "ParseCUDAGraphMode", "ParseSpecMethod", "LayoutWithDrafter"}
	allowed := []string{"setup", "sched", "statecache", "model", "prop", "cmd/statesim", "vllmargs", "knownbugs"}
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		if slices.Contains(allowed, filepath.ToSlash(dir)) {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && slices.Contains(parsers, sel.Sel.Name) {
				t.Errorf("%s calls %s: read it from the settled setup (package setup)", path, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
