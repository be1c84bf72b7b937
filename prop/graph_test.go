package prop

import (
	"testing"

	"statesim/sched"
	"statesim/setup"
	"statesim/step"
)

// observedGraphs is observed for a tiny-hybrid scenario at v0.31 with a
// CUDA-graph mode and patches.
func observedGraphs(t *testing.T, mode string, patches []string, runner string, rows ...step.Row) *Outcome {
	t.Helper()
	p := &Params{Requests: []Request{{Prompt: 8, Output: 2}}, MaxNumBatchedTokens: 8, MaxNumSeqs: 4, StateIndexBits: 64,
		Seed: 1, Preset: "tiny-hybrid", Version: "v0.31", Policy: "fcfs", ChunkedPrefill: true, Backend: "symbolic",
		CUDAGraphMode: mode, Patches: patches, ModelRunner: runner}
	sc, err := p.Scenario("x", "x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st, err := setup.Resolve(sc)
	if err != nil {
		t.Fatal(err)
	}
	o := &Outcome{}
	o.observe(st)(&step.Record{Step: 7, Rows: rows, NumBlocks: 2, BlocksFree: 1})
	return o
}

func graphed(g sched.Graph, rows ...step.Row) []step.Row {
	for i := range rows {
		rows[i].Graph = g
	}
	return rows
}

// TestObserverCatchesAWrongGraph: the observer's own uniform-decode rule
// catches a dispatch the runner got wrong, in either direction, and
// follows #53059's guard when it is patched in under the V1 runner, and
// only there: Model Runner V2 keeps the shape rule, until its own gate
// (#51865, in v0.28 on: v0.31's default runner has it).
func TestObserverCatchesAWrongGraph(t *testing.T) {
	dec, pre := sched.PathDecode, sched.PathPrefill
	full, eager, pw := sched.GraphFull, sched.GraphEager, sched.GraphPiecewise
	decodes := func() []step.Row { return []step.Row{row(1, 1, 9, 5, dec), row(2, 1, 6, 5, dec)} }
	withNew := func() []step.Row { return []step.Row{row(1, 1, 9, 5, dec), row(2, 1, 0, 1, pre)} }
	mixed := func() []step.Row { return []step.Row{row(1, 1, 9, 5, dec), row(2, 4, 0, 8, pre)} }
	for _, c := range []struct {
		name    string
		mode    string
		patches []string
		runner  string
		rows    []step.Row
		wrong   bool
	}{
		{"pure decodes replay FULL", "full_and_piecewise", nil, "", graphed(full, decodes()...), false},
		{"pure decodes sent eager", "full_and_piecewise", nil, "", graphed(eager, decodes()...), true},
		{"a new 1-token prompt has the uniform shape (V1)", "full_and_piecewise", nil, "v1", graphed(full, withNew()...), false},
		{"V2 at v0.31 has #51865's gate: FULL is wrong", "full_and_piecewise", nil, "", graphed(full, withNew()...), true},
		{"V2 at v0.31 has #51865's gate: piecewise", "full_and_piecewise", nil, "", graphed(pw, withNew()...), false},
		{"the same batch under #53059 replays FULL", "full_and_piecewise", []string{"+53059"}, "v1", graphed(full, withNew()...), true},
		{"the same batch under #53059 runs piecewise", "full_and_piecewise", []string{"+53059"}, "v1", graphed(pw, withNew()...), false},
		{"a mixed batch replays FULL", "full_and_piecewise", nil, "", graphed(full, mixed()...), true},
		{"no graphs captured, FULL claimed", "none", nil, "", graphed(full, decodes()...), true},
		{"no graphs captured, eager", "none", nil, "", graphed(eager, decodes()...), false},
		{"under runner v2 without #51865, #53059 leaves the shape rule: FULL", "full_and_piecewise", []string{"+53059", "-51865"}, "v2", graphed(full, withNew()...), false},
		{"under runner v2 without #51865, #53059 leaves the shape rule: piecewise is wrong", "full_and_piecewise", []string{"+53059", "-51865"}, "v2", graphed(pw, withNew()...), true},
	} {
		o := observedGraphs(t, c.mode, c.patches, c.runner, c.rows...)
		if (o.Classification != "") != c.wrong {
			t.Errorf("%s: classification %q, want a disagreement: %v", c.name, o.Classification, c.wrong)
		}
	}
}
