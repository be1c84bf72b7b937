package statesim

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// make test fuzzes by execution count: a time-based -fuzztime races Go
// 1.26's fuzz coordinator, which can fail a target with a bare "context
// deadline exceeded" and no input (golang/go#75804, fixed in Go 1.27). A
// count has no deadline. This keeps the Makefile's fuzz target on counts
// and running every fuzz target of the module.

var (
	fuzzLine    = regexp.MustCompile(`-fuzz '\^(Fuzz\w+)\$\$'.*-fuzztime (\S+)`)
	fuzzDefault = regexp.MustCompile(`(?m)^FUZZTIME\s*\?=\s*(\S+)`)
	minDefault  = regexp.MustCompile(`(?m)^FUZZMINTIME\s*\?=\s*(\S+)`)
)

// fuzzTarget returns the Makefile's `fuzz:` recipe lines.
func fuzzTarget(makefile string) []string {
	var lines []string
	in := false
	for _, l := range strings.Split(makefile, "\n") {
		switch {
		case strings.HasPrefix(l, "fuzz:"):
			in = true
		case in && strings.HasPrefix(l, "\t"):
			lines = append(lines, l)
		case in:
			return lines
		}
	}
	return lines
}

func TestMakeFuzzCountsExecutions(t *testing.T) {
	b, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	mk := string(b)
	for _, re := range []*regexp.Regexp{fuzzDefault, minDefault} {
		m := re.FindStringSubmatch(mk)
		if m == nil || !regexp.MustCompile(`^\d+x$`).MatchString(m[1]) {
			t.Errorf("Makefile: %s must default to an execution count (Nx), got %v", strings.Fields(re.String())[0], m)
		}
	}
	listed := map[string]bool{}
	for _, l := range fuzzTarget(mk) {
		m := fuzzLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		listed[m[1]] = true
		if m[2] != "$(FUZZTIME)" {
			t.Errorf("Makefile fuzz: %s runs with -fuzztime %s: use $(FUZZTIME), a count", m[1], m[2])
		}
		if !strings.Contains(l, "-fuzzminimizetime $(FUZZMINTIME)") {
			t.Errorf("Makefile fuzz: %s must minimise with -fuzzminimizetime $(FUZZMINTIME)", m[1])
		}
	}
	for _, name := range fuzzFuncs(t) {
		if !listed[name] {
			t.Errorf("%s is not run by make fuzz (make test): add its line to the Makefile's fuzz target", name)
		}
	}
}

// fuzzFuncs lists every Fuzz function in the module's test files.
func fuzzFuncs(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, name := range topFuncs(f) {
			if strings.HasPrefix(name, "Fuzz") {
				out = append(out, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no fuzz targets found: the walk is broken")
	}
	return out
}

func topFuncs(f *ast.File) []string {
	var names []string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
			names = append(names, fn.Name.Name)
		}
	}
	return names
}
