package sweep

import (
	"errors"
	"strings"
	"testing"

	"statesim/scenarios"
	"statesim/scenarios/sweeps"
)

// FuzzSweepParse: any bytes parse to a valid sweep or an error in the
// sweep file's words (scenarios.InputError naming it), never a panic; a
// sweep that parses has a vary key, so Load takes it for a sweep.
func FuzzSweepParse(f *testing.F) {
	for _, n := range sweeps.Names() {
		b, _, ok := sweeps.Read(n)
		if !ok {
			f.Fatalf("built-in sweep %s unreadable", n)
		}
		f.Add(b)
	}
	f.Add([]byte("scenario: imposter\nvary:\n  - {key: engine.max_num_seqs, values: [4, 4.0]}\nseeds: 010\n"))
	f.Add([]byte("scenario: imposter\nvary: &a [{key: k, values: [1]}]\nset: *a\n"))
	f.Add([]byte("vary:\nvary:\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := parse(data, "fuzz.yaml")
		if err != nil {
			var ie *scenarios.InputError
			if !errors.As(err, &ie) || ie.File != "fuzz.yaml" {
				t.Fatalf("error %T %q does not name the sweep file", err, err)
			}
			return
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("parsed sweep does not validate: %v", err)
		}
		if !hasVary(data) {
			t.Fatalf("parsed a sweep Load would take for a scenario:\n%s", data)
		}
		for _, a := range spec.Axes {
			if strings.TrimSpace(a.Key) == "" || len(a.Values) == 0 {
				t.Fatalf("axis %+v", a)
			}
		}
	})
}
