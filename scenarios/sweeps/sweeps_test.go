package sweeps

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"statesim/sweep"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.txt from the current simulator")

// TestGolden runs every built-in sweep and compares its table with the
// checked-in one. A change is either a bug or a model change to review:
// regenerate with `go test ./scenarios/sweeps -update` and read the diff.
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
			rs, err := spec.Run(context.Background(), sweep.Options{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := sweep.WriteTable(&b, spec, rs); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("..", "..", "testdata", "golden", "sweep-"+n+".txt")
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
