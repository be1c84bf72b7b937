package statesim

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// layer ranks every package of the module: a package may import only
// packages of a lower rank, so data flows one way — the core yields values,
// the engine drives it and yields step records and a report, and the
// readers (explain, plot, timeline, sweep, prop) only read those. A new
// package takes a rank here, which is the point: its place is a decision.
var layer = map[string]int{
	// bounded reads of input files (every reader of a user's file)
	"internal/infile": -1,
	// whole-or-nothing writes of result files (sweep cells, check summaries)
	"internal/outfile": -1,
	// foundations: time and randomness, names, shapes, trace formats
	"sim": 0, "invariant": 0, "sketch": 0, "trace": 0, "kernels": 0, "model": 0,
	// the built-in sweep definitions, embedded (package sweep parses them)
	"scenarios/sweeps": 0,
	// which test tier runs (tests import it; nothing else may)
	"internal/testtier": 0,
	// the core state machines
	"statecache": 1,
	// workload names shared prompt content in statecache's segments
	"sched": 2, "workload": 2,
	// what a step did, as values; the scenario language
	"step": 3, "scenarios": 3,
	// the scenario settled into a run's plain values; the invariants;
	// vLLM's command line in the scenario language
	"setup": 4, "check": 4, "vllmargs": 4,
	// what a run reports, as values (backends fill some of them); the
	// known-bug table judged against a settled deployment
	"report": 5, "knownbugs": 5,
	// backends: the interface and the symbolic one, then the others
	"backend":      6,
	"backend/mock": 7,
	// the CUDA backend composes the mock (its shadow and reference)
	"backend/cuda": 8, "engine": 8, "refmodel": 8,
	// readers of step records and reports; GPU experiments
	"explain": 9, "plot": 9, "timeline": 9, "prop": 9, "gpuconfirm": 9,
	"sweep": 10,
	// the tests' one way to load and run a scenario (tests import it);
	// the JSON Schema of the scenario and sweep formats
	"internal/runtest": 11, "schema": 11,
	// the thin public entry point and the command
	".":            12,
	"cmd/statesim": 13,
}

// Backends read the settled setup, never the scenario's raw fields.
var forbidden = map[string][]string{"backend": {"scenarios"}, "backend/mock": {"scenarios"}, "backend/cuda": {"scenarios"}}

// Readers of records must not reach into the cache or a numeric backend.
var readers = []string{"explain", "plot", "timeline", "sweep", "prop", "report"}
var internals = []string{"statecache", "backend/mock", "backend/cuda"}

// moduleImports maps each package directory (relative, "." for the root)
// to the module packages its non-test files import, whatever their build
// tags (a cuda-only file must respect the layers too).
func moduleImports(t *testing.T, root, module string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || name == "bin" || name == "out") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		dir = filepath.ToSlash(dir)
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			switch {
			case p == module:
				out[dir] = append(out[dir], ".")
			case strings.HasPrefix(p, module+"/"):
				out[dir] = append(out[dir], strings.TrimPrefix(p, module+"/"))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// layerViolations checks imports against the ranks.
func layerViolations(imports map[string][]string) []string {
	var bad []string
	dirs := make([]string, 0, len(imports))
	for d := range imports {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		rank, ok := layer[d]
		if !ok {
			bad = append(bad, "package "+d+" has no rank in layering_test.go's layer table: give it one")
			continue
		}
		seen := map[string]bool{}
		for _, imp := range imports[d] {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			r, ok := layer[imp]
			switch {
			case !ok:
				bad = append(bad, d+" imports "+imp+", which has no rank")
			case r >= rank:
				bad = append(bad, d+" imports "+imp+": a package may import only lower layers")
			}
			for _, f := range forbidden[d] {
				if imp == f {
					bad = append(bad, d+" imports "+imp+": a backend reads the settled setup (package setup), not the scenario")
				}
			}
			for _, rd := range readers {
				for _, in := range internals {
					if d == rd && imp == in {
						bad = append(bad, d+" imports "+imp+": readers see step records and reports, not the cache or a backend's internals")
					}
				}
			}
		}
	}
	return bad
}

func TestLayering(t *testing.T) {
	for _, v := range layerViolations(moduleImports(t, ".", "statesim")) {
		t.Error(v)
	}
}

// The check can fail: an upward import, a reader reaching into the cache,
// and an unranked package are each reported.
func TestLayeringCatchesViolations(t *testing.T) {
	got := layerViolations(map[string][]string{
		"sched":        {"engine"},
		"plot":         {"statecache"},
		"newthing":     {"sim"},
		"backend/mock": {"scenarios"},
		"report":       {"backend"},
	})
	want := []string{"backend/mock imports scenarios: a backend reads the settled setup", "newthing has no rank", "plot imports statecache: readers",
		"report imports backend: a package may import only lower", "sched imports engine: a package may import only lower"}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("violation %d = %q, want it to mention %q", i, got[i], want[i])
		}
	}
}
