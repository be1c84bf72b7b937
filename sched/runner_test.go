package sched

import "testing"

// A resumed request's last recompute chunk past its prompt (Mamba2,
// MTP K = 1). V1 compares num_computed with the prompt, so the 2-token
// draftless row is not prefilling; whether it decodes depends on the
// step: the V1 runner hands the Mamba2 builder num_accepted_tokens only
// in a step with drafts scheduled, so alone it splits at threshold 1 and
// prefills, beside a draft decode at 1 + K and decodes. V2's prefill_len
// covers the recomputed outputs (the scheduler re-sends all token ids),
// so the row is prefilling and takes the prefill path either way.
func TestResumedRecomputeChunkByRunner(t *testing.T) {
	st := &State{}
	r := &Request{ID: 1, NumPromptTokens: 10, NumOutputTokens: 3, NumPreemptions: 1}
	st.Waiting = []*Request{r}
	st.PopWaiting()
	if got := r.PrefillLen(RunnerV2); got != 13 {
		t.Fatalf("V2 prefill_len %d, want 13 (prompt + outputs at resume)", got)
	}
	if got := r.PrefillLen(RunnerV1); got != 10 {
		t.Fatalf("V1 prefill length %d, want the prompt's 10", got)
	}
	spec := &Spec{Method: SpecMTP, K: 1}
	fix := mustPatched(t, V031, "+55898")
	dec := &Request{ID: 2, NumPromptTokens: 4}
	for _, c := range []struct {
		ru     Runner
		beside bool
		want   Path
	}{{RunnerV1, false, PathPrefill}, {RunnerV1, true, PathDecode}, {RunnerV2, false, PathPrefill}, {RunnerV2, true, PathPrefill}} {
		rows := []Row{{Req: r, NumScheduled: 2, NumComputed: 11}}
		if c.beside {
			rows = append(rows, Row{Req: dec, NumScheduled: 2, NumComputed: 6, NumDrafts: 1})
		}
		ClassifyRunner(fix, BuilderMamba2, rows, make([]Row, 0, 2), false, spec, c.ru)
		for _, row := range rows {
			if row.Req == r && row.Path != c.want {
				t.Errorf("%s, draft row beside: %v: the resumed row is on the %s path, want %s", c.ru, c.beside, row.Path, c.want)
			}
		}
	}
}

// #47381: V2 sorted rows by query length, so with K = 2 a 2-token
// continuing chunk came before a 3-token draft decode and the Mamba split
// stopped at it (#47239's form); with uniform decodes first the draft row
// leads and decodes. V1's reorder is not involved.
func TestV2OrdersUniformDecodesFirst(t *testing.T) {
	chunk := &Request{ID: 1, NumPromptTokens: 100}
	dec := &Request{ID: 2, NumPromptTokens: 10}
	rows := func() []Row {
		return []Row{
			{Req: dec, NumScheduled: 3, NumComputed: 12, NumDrafts: 2},
			{Req: chunk, NumScheduled: 2, NumComputed: 40},
		}
	}
	spec := &Spec{Method: SpecNgram, K: 2}
	old := mustPatched(t, V031, "-47808", "-47381")
	for _, c := range []struct {
		v     Version
		first RequestID
		nd    int
	}{{V031, 2, 1}, {old, 1, 0}} {
		rs := rows()
		nd := ClassifyRunner(c.v, BuilderMamba2, rs, make([]Row, 0, 2), false, spec, RunnerV2)
		if rs[0].Req.ID != c.first || nd != c.nd {
			t.Errorf("%s under V2: row 0 is request %d, %d decodes; want request %d, %d", c.v, rs[0].Req.ID, nd, c.first, c.nd)
		}
	}
	// The V1 reorder (threshold 1 + K: ngram has no drafter group) puts
	// the draft decode first either way.
	rs := rows()
	if nd := ClassifyRunner(old, BuilderMamba2, rs, make([]Row, 0, 2), false, spec, RunnerV1); nd != 1 || rs[0].Req != dec {
		t.Errorf("V1: %d decodes, row 0 request %d", nd, rs[0].Req.ID)
	}
}

// #47808: with #47381 alone a prompt chunk of exactly 1 + K tokens ties
// with a draft decode and, scheduled first, leads: the Mamba2 split stops
// at it (still prefilling) and the draft decode behind it prefills, the
// state after its drafts in column 0. Rows with drafts first (v0.28 on)
// put the draft decode ahead, on the decode path. The example is
// regression mtp-uniform-chunk-nemotron-v2's step 1.
func TestV2DraftsFirst(t *testing.T) {
	chunk := &Request{ID: 0, NumPromptTokens: 4}
	dec := &Request{ID: 1, NumPromptTokens: 1}
	spec := &Spec{Method: SpecMTP, K: 1}
	for _, c := range []struct {
		v          Version
		first      RequestID
		decodePath bool
	}{{V022, 0, false}, {V028, 1, true}, {V031, 1, true}} {
		rows := []Row{
			{Req: chunk, NumScheduled: 2, NumComputed: 2},
			{Req: dec, NumScheduled: 2, NumComputed: 1, NumDrafts: 1},
		}
		ClassifyRunner(c.v, BuilderMamba2, rows, make([]Row, 0, 2), false, spec, RunnerV2)
		if rows[0].Req.ID != c.first {
			t.Errorf("%s: row 0 is request %d, want %d", c.v, rows[0].Req.ID, c.first)
		}
		for _, r := range rows {
			if r.Req == dec && (r.Path == PathDecode) != c.decodePath {
				t.Errorf("%s: the draft decode is on the %s path", c.v, r.Path)
			}
			if r.Req == chunk && r.Path != PathPrefill {
				t.Errorf("%s: the prompt chunk is on the %s path", c.v, r.Path)
			}
		}
	}
}

// mustPatched is Patched for a test: a PR set it refuses fails the test
// instead of leaving the zero Version (v0.13) to stand in for it.
func mustPatched(t *testing.T, v Version, patches ...string) Version {
	t.Helper()
	w, err := Patched(v, patches)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
