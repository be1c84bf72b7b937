package sched

import "testing"

// padSched is newPrefixSched (block size 16, every request's first
// shared tokens the same ids) with #45237's padding and K = 3.
func padSched(t *testing.T, budget, shared int) *Scheduler {
	t.Helper()
	s := newPrefixSched(t, Config{MaxNumBatchedTokens: budget, MaxNumSeqs: 8, MaxModelLen: 1000,
		EnableChunkedPrefill: true, PadSpecTail: true}, 64, shared)
	s.Spec = Spec{Method: SpecNgram, K: 3, Accept: Acceptance{Fixed: 3}}
	return s
}

func mustStep(t *testing.T, s *Scheduler) *Output {
	t.Helper()
	out, err := s.Schedule(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(out, 0); err != nil {
		t.Fatal(err)
	}
	return out
}

// rowOf is req's row in out, or nil.
func rowOf(out *Output, r *Request) *Row {
	for i := range out.Rows {
		if out.Rows[i].Req == r {
			return &out.Rows[i]
		}
	}
	return nil
}

// vLLM's test_spec_decode_padding_first_decode_step (#45237,
// tests/v1/core/test_scheduler.py @ d490b9816): a second identical
// 33-token prompt hits 32 tokens and has one left; beside a running
// speculative decode it is scheduled 1 + K tokens with K placeholder
// drafts. The sampler accepts none of them, whatever the acceptance:
// the request ends at 33 computed tokens and one output token.
func TestSpecPadsOneTokenTail(t *testing.T) {
	s := padSched(t, 1000, 33)
	r1 := addReq(s, 0, 33, 16)
	out := mustStep(t, s)
	if n := rowOf(out, r1).NumScheduled; n != 33 {
		t.Fatalf("r1's prefill scheduled %d, want 33", n)
	}
	r2 := addReq(s, 1, 33, 16)
	out, err := s.Schedule(1)
	if err != nil {
		t.Fatal(err)
	}
	a, b := rowOf(out, r1), rowOf(out, r2)
	if a.NumScheduled != 4 || a.NumDrafts != 3 || a.Placeholders {
		t.Fatalf("r1: %d scheduled, %d drafts, placeholders %v; want its 3 real drafts", a.NumScheduled, a.NumDrafts, a.Placeholders)
	}
	if b.NumScheduled != 4 || b.NumComputed != 32 || b.NumDrafts != 3 || !b.Placeholders {
		t.Fatalf("r2: %d scheduled from %d, %d drafts, placeholders %v; want 4 from 32 with 3 placeholders",
			b.NumScheduled, b.NumComputed, b.NumDrafts, b.Placeholders)
	}
	if _, err := s.Update(out, 2); err != nil {
		t.Fatal(err)
	}
	if b.NumAccepted != 0 || r2.NumComputedTokens != 33 || r2.NumOutputTokens != 1 || r2.AcceptedColumn() != 0 {
		t.Fatalf("r2 after the step: %d accepted, %d computed, %d outputs, column %d; want 0, 33, 1, 0",
			b.NumAccepted, r2.NumComputedTokens, r2.NumOutputTokens, r2.AcceptedColumn())
	}
	if r1.NumComputedTokens != 37 {
		t.Fatalf("r1 computed %d, want 37 (all 3 real drafts accepted)", r1.NumComputedTokens)
	}
}

// vLLM's test_spec_decode_padding_skipped_with_prefill_in_batch: with a
// running request still a prefill chunk the batch is mixed anyway, and
// the tail is scheduled as its one token, no drafts. Nor is it padded
// when no running request was scheduled, or without #45237.
func TestSpecPadSkipped(t *testing.T) {
	s := padSched(t, 64, 33)
	warm := addReq(s, 0, 33, 1)
	mustStep(t, s)
	if warm.Status != Finished {
		t.Fatalf("the warming request did not finish")
	}
	long := addReq(s, 1, 100, 16)
	mustStep(t, s)
	if !long.prefillChunk {
		t.Fatalf("the 100-token prompt is not a prefill chunk after one step (%d computed)", long.NumComputedTokens)
	}
	cand := addReq(s, 2, 33, 1)
	out, err := s.Schedule(2)
	if err != nil {
		t.Fatal(err)
	}
	if rowOf(out, long) == nil {
		t.Fatal("the long prompt's next chunk is not scheduled")
	}
	if c := rowOf(out, cand); c == nil || c.NumScheduled != 1 || c.NumDrafts != 0 {
		t.Fatalf("the tail beside a prefill chunk: %+v; want 1 token, no drafts", c)
	}

	// Alone (nothing running), the tail is its one token.
	s = padSched(t, 64, 33)
	addReq(s, 0, 33, 1)
	mustStep(t, s) // it finishes, its blocks cached
	alone := addReq(s, 1, 33, 4)
	out, err = s.Schedule(1)
	if err != nil {
		t.Fatal(err)
	}
	if c := rowOf(out, alone); c == nil || c.NumScheduled != 1 || c.NumDrafts != 0 {
		t.Fatalf("a tail with no running request: %+v; want 1 token, no drafts", c)
	}

	// Without #45237 the tail beside a speculative decode is one token.
	s = padSched(t, 1000, 33)
	s.Cfg.PadSpecTail = false
	addReq(s, 0, 33, 16)
	mustStep(t, s)
	r2 := addReq(s, 1, 33, 16)
	out, _ = s.Schedule(1)
	if c := rowOf(out, r2); c.NumScheduled != 1 || c.NumDrafts != 0 {
		t.Fatalf("without #45237: %d scheduled, %d drafts; want 1 and 0", c.NumScheduled, c.NumDrafts)
	}
}

// A padded tail over the budget is not scheduled un-padded: the waiting
// loop stops ("Prefer to not schedule than schedule un-padded here").
func TestSpecPadOverBudgetWaits(t *testing.T) {
	s := padSched(t, 7, 33)
	r1 := addReq(s, 0, 33, 16)
	for r1.NumComputedTokens < 33 {
		mustStep(t, s)
	}
	r2 := addReq(s, 1, 33, 16)
	out, err := s.Schedule(1)
	if err != nil {
		t.Fatal(err)
	}
	// r1 takes 4 of 7; 1 + K = 4 more do not fit.
	if rowOf(out, r1) == nil || rowOf(out, r2) != nil || r2.Status != Waiting {
		t.Fatalf("rows %d, r2 %s; want r1 alone and r2 waiting", len(out.Rows), r2.Status)
	}
}

// The releases: #45237 pads from v0.28 (statesim's row for it), and
// #55178 from v0.31 makes the Mamba2 builder decode a padded tail that
// has state; a tail with no state (a new one-token prompt) stays a
// prefill, and the Mamba1 builder, handed no draft counts, keeps it a
// prefill. The GDN builder takes it as a spec row by its mask in every
// release (gdn_attn.py: num_decode_draft_tokens >= 0).
func TestPaddedTailSplit(t *testing.T) {
	if V022.Behaviour().PadSpecTail || !V028.Behaviour().PadSpecTail || !V031.Behaviour().PadSpecTail {
		t.Fatal("PadSpecTail: want it from v0.28 only")
	}
	spec := &Spec{Method: SpecNgram, K: 3}
	mk := func(c int) []Row {
		return []Row{
			{Req: &Request{ID: 1, NumPromptTokens: 10}, NumScheduled: 4, NumComputed: 12, NumDrafts: 3},
			{Req: &Request{ID: 2, NumPromptTokens: c + 1}, NumScheduled: 4, NumComputed: c, NumDrafts: 3, Placeholders: true},
		}
	}
	for _, tc := range []struct {
		v     Version
		b     Builder
		c     int
		want  Path
		label string
	}{
		{V028, BuilderMamba2, 32, PathPrefill, "v0.28 Mamba2: the padded tail prefills"},
		{mustPatched(t, V028, "+55178"), BuilderMamba2, 32, PathDecode, "v0.28+55178 Mamba2"},
		{V031, BuilderMamba2, 32, PathDecode, "v0.31 Mamba2"},
		{V031, BuilderMamba2, 0, PathPrefill, "v0.31 Mamba2, a new one-token prompt (no state)"},
		{V031, BuilderMamba, 32, PathPrefill, "v0.31 Mamba1 (no draft counts)"},
		{V028, BuilderGDN, 32, PathDecode, "v0.28 GDN (spec mask)"},
	} {
		rs := mk(tc.c)
		ClassifySpec(tc.v, tc.b, rs, make([]Row, 0, 2), false, spec)
		for _, r := range rs {
			if r.Req.ID == 2 && r.Path != tc.want {
				t.Errorf("%s: the padded tail takes %s, want %s", tc.label, r.Path, tc.want)
			}
		}
	}
}
