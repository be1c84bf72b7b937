package sweep

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"statesim/internal/testtier"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.txt from the current simulator")

// longTests reports whether the long tier runs, or an update, which must
// write whole tables.
func longTests() bool { return testtier.Long() || *update }

// TestGolden runs every built-in sweep and compares its table with the
// checked-in one. A change is either a bug or a model change to review:
// regenerate with `go test ./scenarios/sweeps -update` and read the diff.
//
// The suite runs a diagonal of the grid, each cell at one seed: point j
// takes value j mod n of every axis of n values and seed j mod the seed
// count, for j up to the longest axis or the seed count if larger, so
// that every value of every axis and every seed is run somewhere (10 of
// bug-a-memory's 320 runs, every value of a one-axis sweep), and each of
// those rows must equal the checked-in table's row field for field. The
// long tier runs every cell and compares the whole table, the per-point
// summary included.
func TestGolden(t *testing.T) {
	names := Names()
	if len(names) < 3 {
		t.Fatalf("built-in sweeps: %v", names)
	}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			spec, ok, err := Load(n)
			if err != nil || !ok {
				t.Fatalf("load %s: %v (found %v)", n, err, ok)
			}
			path := filepath.Join("..", "testdata", "golden", "sweep-"+n+".txt")
			if !longTests() {
				goldenRows(t, spec, path)
				return
			}
			rs, err := spec.Run(context.Background(), Options{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := WriteTable(&b, spec, rs); err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (generate it with: go test ./scenarios/sweeps -update)", err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("sweep %s differs from %s (regenerate with -update if the change is intended):\n%s", n, path, diff(string(want), got))
			}
		})
	}
}

// suiteSkips are values the suite leaves to the long tier: 128 rollouts
// per prompt is twice the 64 the suite runs and half of bug-b-rollouts'
// suite time, for one more point of the same curve.
var suiteSkips = map[string]string{"bug-b-rollouts": "128"}

// diagonal is the suite's cells of a grid (see TestGolden), in grid order.
func diagonal(spec *Spec, cells []Cell) []Cell {
	longest := spec.Seeds // so that every seed runs, had a spec more seeds than values
	for _, a := range spec.Axes {
		longest = max(longest, len(a.Values))
	}
	var out []Cell
	for j := range longest {
		point := 0 // the odometer's index, last axis fastest
		for _, a := range spec.Axes {
			point = point*len(a.Values) + j%len(a.Values)
		}
		c := cells[point*spec.Seeds+j%spec.Seeds]
		if skip, ok := suiteSkips[spec.Name]; ok && slices.Contains(c.Values, skip) {
			continue
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Cell) int { return a.Index - b.Index })
	return out
}

// goldenRows runs the diagonal of spec's grid and checks each result row
// against the same row of the checked-in table at path.
func goldenRows(t *testing.T, spec *Spec, path string) {
	t.Helper()
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it with: go test ./scenarios/sweeps -update)", err)
	}
	// The per-cell rows: from the header to the first blank line.
	rows := map[string]string{}
	head := len(spec.Axes) + 1 // the axis values and the seed name a row
	for _, ln := range strings.Split(string(want), "\n")[1:] {
		if strings.TrimSpace(ln) == "" {
			break
		}
		f := strings.Fields(ln)
		rows[strings.Join(f[:head], " ")] = strings.Join(f, " ")
	}
	cells, err := spec.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(cells) {
		t.Fatalf("%s has %d rows, the sweep %d cells (regenerate it with -update)", path, len(rows), len(cells))
	}
	var rs []*Result
	for _, c := range diagonal(spec, cells) {
		r, err := spec.RunCell(c)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, spec, rs); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(b.String(), "\n")[1 : 1+len(rs)]
	for _, ln := range got {
		f := strings.Fields(ln)
		key := strings.Join(f[:head], " ")
		if w := rows[key]; w != strings.Join(f, " ") {
			t.Errorf("%s, cell %s:\n got  %s\n want %s\n(regenerate with -update if the change is intended)", spec.Name, key, strings.Join(f, " "), w)
		}
	}
}

// diff shows the first differing lines.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 10; i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			b.WriteString("- " + a + "\n+ " + c + "\n")
			shown++
		}
	}
	return b.String()
}

func TestLoadRejectsUnknown(t *testing.T) {
	if _, ok, _ := Load("no-such-sweep"); ok {
		t.Fatal("found a sweep that does not exist")
	}
	for _, n := range Names() {
		s, _, err := Load(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Plan(); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sc := write("sc.yaml", "name: sc\nmodel: {preset: tiny-hybrid}\nworkload: {kind: batches, num_prompts: 4, batch_size: 2}\n")
	sw := write("grid.yml", "scenario: sc.yaml\nvary:\n  - key: engine.max_num_seqs\n    values: [\"1\", \"2\"]\n")
	spec, ok, err := Load(sw)
	if err != nil || !ok {
		t.Fatalf("Load(%s): %v, %v", sw, ok, err)
	}
	if spec.Name != "grid" || spec.Scenario != sc || spec.Seeds != 1 {
		t.Fatalf("name %q, scenario %q (want %q), seeds %d", spec.Name, spec.Scenario, sc, spec.Seeds)
	}
	if cells, err := spec.Plan(); err != nil || len(cells) != 2 {
		t.Fatalf("plan: %d cells, %v", len(cells), err)
	}
	// A scenario file is not a sweep; a sweep with an unknown field is an error.
	if _, ok, err := Load(sc); ok || err != nil {
		t.Fatalf("scenario file taken for a sweep: %v, %v", ok, err)
	}
	bad := write("bad.yaml", "scenario: sc.yaml\nvary: []\nbogus: 1\n")
	if _, ok, err := Load(bad); !ok || err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown field: %v, %v", ok, err)
	}
}
