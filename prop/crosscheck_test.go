package prop

import (
	"slices"
	"strings"
	"testing"

	_ "statesim/backend/mock" // backend kind "mock"
	"statesim/refmodel"
	"statesim/report"
)

// mockParams is a small mock run: three requests sharing a pool of a few
// blocks, so later ones reuse earlier ones' slots; version selects
// whether bug A corrupts one.
func mockParams(version string) *Params {
	return &Params{Requests: []Request{{Prompt: 9, Output: 6}, {Prompt: 2, Output: 5}, {GapUS: 100, Prompt: 12, Output: 4}},
		MaxNumSeqs: 2, MaxNumBatchedTokens: 1, StateIndexBits: 64, Seed: 3,
		Preset: "tiny-hybrid", Version: version, Policy: "fcfs", ChunkedPrefill: true, Backend: "mock"}
}

// TestCrossCheckHealthy: on a fixed run every request, followed in turn,
// agrees with the float64 reference.
func TestCrossCheckHealthy(t *testing.T) {
	r := NewRunner(t.TempDir(), nil)
	p := mockParams("fixed")
	o := r.Run(p)
	if o.Err != nil || o.Report.Divergence == nil || o.Report.Divergence.RequestsDivergent != 0 {
		t.Fatalf("the fixed run is not a healthy numeric run: %v, %+v", o.Err, o.Report.Divergence)
	}
	if len(o.Report.Tokens) == 0 {
		t.Fatal("the mock run kept no token trace of the last request: the property's cross-check would be skipped")
	}
	for id := range int64(len(p.Requests)) {
		if err := r.crossCheck(p, o, id, -1); err != nil {
			t.Errorf("request %d: %v", id, err)
		}
	}
}

// withTokens is o with its token trace changed by edit.
func withTokens(o *Outcome, edit func(tt []report.TokenTrace)) *Outcome {
	rep := *o.Report
	rep.Tokens = slices.Clone(o.Report.Tokens)
	edit(rep.Tokens)
	q := *o
	q.Report = &rep
	return &q
}

// TestCrossCheckCanFail: a healthy request whose engine log-prob is off by
// twice the tolerance, a backend reference that is off, and a divergent
// request whose engine log-prob the float64 reference confirms (so the
// backend's own reference is the one wrong) are each caught; under v0.13
// the corrupted request differs from both references and passes.
func TestCrossCheckCanFail(t *testing.T) {
	r := NewRunner(t.TempDir(), nil)
	p := mockParams("fixed")
	o := r.Run(p)
	last := followed(p)
	shift := 2 * refmodel.Tolerance
	for name, c := range map[string]struct {
		edit func(tt []report.TokenTrace)
		want string
	}{
		"engine off":    {func(tt []report.TokenTrace) { tt[1].EngineLP -= shift }, "though the backend's own reference agrees"},
		"reference off": {func(tt []report.TokenTrace) { tt[0].ReferenceLP += shift }, "the backend's arithmetic is wrong"},
	} {
		err := r.crossCheck(p, withTokens(o, c.edit), last, -1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
	// A request reported divergent whose numbers agree with the float64
	// reference: the divergence is the backend's own mistake.
	if err := r.crossCheck(p, o, last, 0); err == nil || !strings.Contains(err.Error(), "yet its engine log-prob") {
		t.Errorf("a divergence the float64 reference contradicts: %v", err)
	}

	bad := mockParams("v0.13")
	ob := r.Run(bad)
	if ob.Err != nil || len(ob.Report.DivergentRequests) == 0 {
		t.Fatalf("v0.13 corrupted no request: %v", ob.Err)
	}
	dv := ob.Report.DivergentRequests[0]
	if err := r.crossCheck(bad, ob, dv.RequestID, dv.FirstBadToken); err != nil {
		t.Errorf("the corrupted request %d: %v", dv.RequestID, err)
	}
}
