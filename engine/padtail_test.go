package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"statesim/engine"
	"statesim/internal/runtest"
	"statesim/invariant"
	"statesim/step"
)

// The kept padded-tail case ([64→2, +0us 65→2], align, ngram K = 1):
// request 1 hits 64 tokens and is scheduled 2 (one placeholder) beside
// request 0's decode. At v0.28 the Mamba2 prefill kernel leaves the state
// after 66 tokens where the request resumes at 65; #55178 makes the row
// a decode, whose columns keep the state after each position; without
// #45237 the tail runs as its one token. Model Runner V2 gives the row
// the same is_prefilling and draft count, so it fails the same way.
func TestPaddedTailStateWrite(t *testing.T) {
	const file = "scenarios/regressions/spec-padded-tail-55178.yaml" // TestMain runs from the root
	for _, c := range []struct {
		sets  []string
		stale int64
		rows  string // request 1's first row: scheduled/drafts/path
	}{
		{nil, 1, "2/1/prefill"},
		{[]string{"engine.model_runner=v2"}, 1, "2/1/prefill"},
		{[]string{"engine.patches=[+55178]"}, 0, "2/1/decode"},
		{[]string{"engine.patches=[-45237]"}, 0, "1/0/decode"},
	} {
		first := ""
		rep := runtest.Run(t, file, engine.Options{Observe: func(r *step.Record) {
			for _, row := range r.Rows {
				if row.RequestID == 1 && first == "" {
					first = fmt.Sprintf("%d/%d/%s", row.NumScheduled, row.NumDrafts, row.Path)
				}
			}
		}}, c.sets...)
		if got := rep.Count(invariant.StaleSlotRead); got != c.stale || first != c.rows {
			t.Errorf("%v: %d stale-slot-reads, request 1's first row %s; want %d and %s", c.sets, got, first, c.stale, c.rows)
		}
		if c.stale > 0 && (len(rep.Violations) == 0 || !strings.Contains(rep.Violations[0].Detail, "continues its state after 65 tokens") ||
			!strings.Contains(rep.Violations[0].Detail, "holds own state after 66 tokens")) {
			t.Errorf("%v: violations %v; want the state after 66 tokens read at 65", c.sets, rep.Violations)
		}
	}
}
