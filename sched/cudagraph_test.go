package sched

import (
	"strings"
	"testing"
)

func graphRows(q, c, p []int) []Row {
	rows := make([]Row, len(q))
	for i := range q {
		rows[i] = Row{Req: &Request{NumPromptTokens: p[i]}, NumScheduled: q[i], NumComputed: c[i], PrefillLen: p[i]}
	}
	return rows
}

// The uniform-decode rule, cases after vLLM's _is_uniform_decode (K = 0):
// every row exactly 1 token; #53059 adds "no row still prefilling".
func TestDispatchUniformDecode(t *testing.T) {
	// v0.31 without V2's own gate (#51865, in from v0.28) as the
	// shape-only base; g2 is the release as shipped.
	ungated, err := Patched(V031, []string{"-51865"})
	if err != nil {
		t.Fatal(err)
	}
	v31 := ungated.Behaviour()
	guarded, err := Patched(V031, []string{"+53059", "-51865"})
	if err != nil {
		t.Fatal(err)
	}
	g := guarded.Behaviour()
	g2 := V031.Behaviour()
	for _, tc := range []struct {
		name    string
		q, c, p []int
		mode    CUDAGraphMode
		maxBS   int
		want    Graph // without the guard
		wantG   Graph // with #53059
	}{
		{"pure decodes", []int{1, 1}, []int{9, 5}, []int{4, 5}, GraphModeFullAndPiecewise, 0, GraphFull, GraphFull},
		{"new 1-token prompt among decodes", []int{1, 1}, []int{9, 0}, []int{4, 1}, GraphModeFullAndPiecewise, 0, GraphFull, GraphPiecewise},
		{"1-token chunk of a longer prompt", []int{1}, []int{3}, []int{8}, GraphModeFullAndPiecewise, 0, GraphFull, GraphPiecewise},
		{"a 2-token row", []int{1, 2}, []int{9, 0}, []int{4, 2}, GraphModeFullAndPiecewise, 0, GraphPiecewise, GraphPiecewise},
		{"full_decode_only, mixed", []int{1, 2}, []int{9, 0}, []int{4, 2}, GraphModeFullDecodeOnly, 0, GraphEager, GraphEager},
		{"piecewise only", []int{1, 1}, []int{9, 5}, []int{4, 5}, GraphModePiecewise, 0, GraphPiecewise, GraphPiecewise},
		{"eager", []int{1}, []int{9}, []int{4}, GraphModeNone, 0, GraphEager, GraphEager},
		{"past the largest capture size", []int{1, 1, 1}, []int{9, 5, 4}, []int{4, 5, 4}, GraphModeFullAndPiecewise, 2, GraphPiecewise, GraphPiecewise},
	} {
		rows := graphRows(tc.q, tc.c, tc.p)
		if got := v31.Dispatch(tc.mode, RunnerV1, rows, tc.maxBS, 1); got != tc.want {
			t.Errorf("%s: v0.31 dispatches %s, want %s", tc.name, got, tc.want)
		}
		if got := g.Dispatch(tc.mode, RunnerV1, rows, tc.maxBS, 1); got != tc.wantG {
			t.Errorf("%s: v0.31+53059 dispatches %s, want %s", tc.name, got, tc.wantG)
		}
		// #53059 edits V1's _is_uniform_decode only: under Model Runner
		// V2 the patched release dispatches as the unpatched one. V2's
		// own gate (#51865) does under V2 what #53059 does under V1, and
		// nothing under V1.
		if got := g.Dispatch(tc.mode, RunnerV2, rows, tc.maxBS, 1); got != tc.want {
			t.Errorf("%s: v0.31+53059 under runner v2 dispatches %s, want %s", tc.name, got, tc.want)
		}
		if got := g2.Dispatch(tc.mode, RunnerV2, rows, tc.maxBS, 1); got != tc.wantG {
			t.Errorf("%s: v0.31+51865 under runner v2 dispatches %s, want %s", tc.name, got, tc.wantG)
		}
		if got := g2.Dispatch(tc.mode, RunnerV1, rows, tc.maxBS, 1); got != tc.want {
			t.Errorf("%s: v0.31+51865 under runner v1 dispatches %s, want %s", tc.name, got, tc.want)
		}
	}
}

// The bug at K = 0 as a state machine: a pure-decode step fills the
// buffer; the next step has a new 1-token prompt that the v0.31 GDN
// builder sends to prefill (num_prefills = 1: no refresh), yet its shape
// is uniform, so the decode graph replays the old indices.
func TestStaleBufferOnUniformShape(t *testing.T) {
	var buf StateIndexBuffer
	if buf.Addressed(0) != NullBlock {
		t.Fatal("a fresh buffer must address the null block")
	}
	b := V031.Behaviour()
	slots := []int32{7, 3}
	// Step 1: requests A (slot 7) and B (slot 3) decode.
	rows := graphRows([]int{1, 1}, []int{10, 6}, []int{4, 2})
	nd := ClassifyFor(V031, BuilderGDN, rows, make([]Row, 0, 2), false)
	buf.Build(GraphModeFullAndPiecewise, rows, nd, 0, func(i int) int32 { return slots[i] })
	if b.Dispatch(GraphModeFullAndPiecewise, RunnerV1, rows, 0, 1) != GraphFull || buf.Addressed(0) != 7 || buf.Addressed(1) != 3 {
		t.Fatalf("pure decode: want FULL with [7 3], got %d %d", buf.Addressed(0), buf.Addressed(1))
	}
	// Step 2: B finished; A decodes, new request C (1-token prompt, slot 3
	// recycled... given slot 5 here) joins at row 1, then row 2 is empty.
	rows = graphRows([]int{1, 1}, []int{11, 0}, []int{4, 1})
	slots = []int32{7, 5}
	nd = ClassifyFor(V031, BuilderGDN, rows, make([]Row, 0, 2), false)
	if nd != 1 {
		t.Fatalf("v0.31's GDN builder: want C a prefill (nd 1), got nd %d", nd)
	}
	buf.Build(GraphModeFullAndPiecewise, rows, nd, 0, func(i int) int32 { return slots[i] })
	if b.Dispatch(GraphModeFullAndPiecewise, RunnerV1, rows, 0, 1) != GraphFull {
		t.Fatal("uniform shape must replay the FULL graph without #53059")
	}
	if got := buf.Addressed(1); got != 3 {
		t.Fatalf("C's replayed kernel: want B's stale slot 3, got %d", got)
	}
	// At v0.22 the GDN builder calls C a decode itself: nd == 2, the buffer
	// is refreshed and the replay addresses C's own slot (bug A's imposter
	// instead, caught elsewhere).
	rows = graphRows([]int{1, 1}, []int{11, 0}, []int{4, 1})
	nd = ClassifyFor(V022, BuilderGDN, rows, make([]Row, 0, 2), false)
	buf.Build(GraphModeFullAndPiecewise, rows, nd, 0, func(i int) int32 { return slots[i] })
	if nd != 2 || buf.Addressed(1) != 5 {
		t.Fatalf("v0.22: want nd 2 and slot 5, got nd %d slot %d", nd, buf.Addressed(1))
	}
}

func TestPatches(t *testing.T) {
	for _, tc := range []struct {
		v       Version
		patches []string
		name    string
		err     string
	}{
		{V031, []string{"+53059"}, "v0.31+53059", ""},
		{V031, []string{"-51565"}, "v0.31-51565", ""},
		{V022, []string{"+51565", "+51483"}, "v0.22+51565+51483", ""},
		{V031, []string{"-42430"}, "", "PR #51565"},
		{V019, []string{"+51565"}, "", "builds on PR #42430"},
		{V031, []string{"+51565"}, "", "already contains"},
		{V022, []string{"-51565"}, "", "does not contain"},
		{V031, []string{"+99999"}, "", "not a PR statesim models"},
		{V031, []string{"53059"}, "", "want +N or -N"},
		{V031, []string{"+53059", "-53059"}, "", "patched twice"},
		{V0, []string{"+53059"}, "", "v0 control"},
	} {
		w, err := Patched(tc.v, tc.patches)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %v: want error containing %q, got %v", tc.v, tc.patches, tc.err, err)
			}
			continue
		}
		if err != nil || w.String() != tc.name || w.Release() != tc.v {
			t.Errorf("%s %v: got %s (%v), release %s", tc.v, tc.patches, w, err, w.Release())
		}
	}
	// -51565 at v0.31 is v0.22's GDN split; +both at v0.22 is v0.31.
	if a := mustPatched(t, V031, "-51565"); a.Behaviour().GDN != V022.Behaviour().GDN {
		t.Error("v0.31-51565's GDN split is not v0.22's")
	}
	w := mustPatched(t, V028, "+51565", "+51483", "+55178")
	b, want := w.Behaviour(), V031.Behaviour()
	b.Name = want.Name
	if b != want {
		t.Errorf("v0.28+51565+51483+55178 = %+v, want v0.31's %+v", b, want)
	}
}

// The written-out release rows equal what their PR sets build.
func TestReleasesArePRSets(t *testing.T) {
	for v := Version(0); v < numVersions; v++ {
		if v == V0 {
			continue
		}
		b, want := behaviourOf(prSet(v)), v.Behaviour()
		b.Name = want.Name
		if b != want {
			t.Errorf("%s: PR set builds %+v, the table says %+v", v, b, want)
		}
	}
}
