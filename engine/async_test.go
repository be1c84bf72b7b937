package engine_test

import (
	"bytes"
	"testing"

	"statesim/engine"
	"statesim/prop"
)

// asyncBase is a small hybrid run with chunked prefills, decodes and a
// request arriving mid-run, under the fixed version.
func asyncBase(async bool) *prop.Params {
	p := base(prop.Request{Prompt: 40, Output: 6}, prop.Request{GapUS: 0, Prompt: 9, Output: 4},
		prop.Request{GapUS: 30_000, Prompt: 23, Output: 5}, prop.Request{GapUS: 1, Prompt: 1, Output: 3})
	p.MaxNumBatchedTokens = 16
	p.AsyncScheduling = async
	return p
}

// Async scheduling changes when rows are scheduled, not what is computed:
// every request gets all its tokens, the run is clean, and the decode
// rows go out one step ahead. A row scheduled before its previous step's
// output was applied is a decode whose computed count already covers
// every known token (NumComputed == NumPrompt + NumOutput); in a
// synchronous run every decode row computes the one token it knows last.
func TestAsyncRunsOneStepAheadClean(t *testing.T) {
	for _, async := range []bool{false, true} {
		rep, steps := run(t, scenario(t, asyncBase(async)), nil)
		clean(t, rep)
		ahead := 0
		for _, s := range steps {
			for _, row := range s.Rows {
				if row.NumComputed >= row.NumPrompt && row.NumComputed == row.NumPrompt+row.NumOutput {
					ahead++
				}
			}
		}
		if async && ahead == 0 {
			t.Errorf("async: no row was scheduled ahead of its output in %d steps", len(steps))
		}
		if !async && ahead != 0 {
			t.Errorf("sync: %d rows scheduled ahead of their output", ahead)
		}
		if rep.OutputTokens != 6+4+5+3 {
			t.Errorf("async %v: %d output tokens, want 18", async, rep.OutputTokens)
		}
	}
}

// The one-step-ahead order is deterministic: same scenario, same bytes.
func TestAsyncSameBytes(t *testing.T) {
	var out [2][]byte
	for i := range out {
		rep, err := engine.Run(scenario(t, asyncBase(true)), engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := rep.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		out[i] = b.Bytes()
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Error("two async runs of one scenario differ")
	}
}
