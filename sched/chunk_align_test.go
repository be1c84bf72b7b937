package sched

import "testing"

// vLLM's cases for the align-mode chunk policy: inputs and expected
// outputs from tests/v1/core/test_prefill_chunk_alignment.py @ f1ea52eb
// and the cases of tests/v1/core/test_mamba_block_aligned_split.py @
// e11491c3 that hold for the merged rule (that file also tests PR #40757,
// still open, which keeps sub-block chunks: those cases appear here with
// the merged rule's 0, marked).
func TestAlignMambaChunkVLLMCases(t *testing.T) {
	cases := []struct {
		name                                    string
		computed, scheduled, prompt, tokens, bs int
		eagle                                   bool
		want                                    int
	}{
		{"far from the tail: a multiple of B", 0, 30, 100, 100, 16, false, 16},
		{"far from the tail, eagle", 0, 30, 100, 100, 16, true, 16},
		{"straddles the last boundary 96", 80, 20, 100, 100, 16, false, 16},
		{"eagle pulls the boundary back to 80", 64, 20, 100, 100, 16, true, 16},
		{"past the last boundary: the tail as is", 96, 4, 100, 100, 16, false, 4},
		{"already aligned", 0, 8192, 20000, 20000, 16, false, 8192},
		{"rounds down", 0, 100, 1000, 1000, 16, false, 96},
		{"exactly one block", 0, 16, 1000, 1000, 16, false, 16},
		{"one block mid-prompt", 8736, 16, 20000, 20000, 16, false, 16},
		{"17 rounds to 16", 8736, 17, 20000, 20000, 16, false, 16},
		{"the last few tokens", 100, 5, 105, 105, 16, false, 5},
		{"forced to end at 96", 80, 25, 105, 105, 16, false, 16},
		{"decoding: unchanged", 100, 1, 100, 100, 16, false, 1},
		{"eagle: last boundary 80", 0, 100, 105, 105, 16, true, 80},
		{"after the gap: back to aligned", 8751, 8192, 17500, 17500, 16, false, 8192},
		{"31", 8736, 31, 20000, 20000, 16, false, 16},
		{"32", 8736, 32, 20000, 20000, 16, false, 32},
		{"33", 8736, 33, 20000, 20000, 16, false, 32},
		{"47", 8736, 47, 20000, 20000, 16, false, 32},
		{"48", 8736, 48, 20000, 20000, 16, false, 48},
		{"100 mid-prompt", 8736, 100, 20000, 20000, 16, false, 96},
		// #40757 (open) would return the sub-block count for these.
		{"sub-block 15 rounds to 0 (merged rule)", 8736, 15, 20000, 20000, 16, false, 0},
		{"sub-block 1 rounds to 0 (merged rule)", 8736, 1, 20000, 20000, 16, false, 0},
		{"sub-block 7, eagle, rounds to 0", 8736, 7, 20000, 20000, 16, true, 0},
	}
	for _, c := range cases {
		if got := AlignMambaChunk(c.computed, c.scheduled, c.prompt, c.tokens, c.bs, c.eagle); got != c.want {
			t.Errorf("%s: AlignMambaChunk(%d, %d, %d, %d, %d, %v) = %d, want %d",
				c.name, c.computed, c.scheduled, c.prompt, c.tokens, c.bs, c.eagle, got, c.want)
		}
	}
}

// A resumed request replays its output as prefill: the policy applies
// while numComputed < numTokens−1, not only below the prompt (PR #33706).
func TestAlignMambaChunkResumed(t *testing.T) {
	// prompt 40, 30 output tokens, preempted: num_tokens 70, computed 0.
	if got := AlignMambaChunk(0, 50, 40, 70, 16, false); got != 48 {
		t.Errorf("resumed, first chunk: got %d, want 48", got)
	}
	if got := AlignMambaChunk(48, 22, 40, 70, 16, false); got != 16 {
		t.Errorf("resumed, straddling 64: got %d, want 16", got)
	}
	if got := AlignMambaChunk(69, 1, 40, 70, 16, false); got != 1 {
		t.Errorf("resumed, caught up: got %d, want 1", got)
	}
}

// Properties over a grid: the result never exceeds the request, a chunk
// that stops short of the last boundary is whole blocks (so a chunk that
// starts on a boundary ends on one), and no chunk crosses the last
// boundary.
func TestAlignMambaChunkInvariants(t *testing.T) {
	for _, bs := range []int{1, 4, 16} {
		for _, eagle := range []bool{false, true} {
			for tokens := 1; tokens <= 40; tokens++ {
				last := tokens - tokens%bs
				if eagle {
					last = max(last-bs, 0)
				}
				for c := 0; c < tokens; c++ {
					for s := 1; c+s <= tokens; s++ {
						got := AlignMambaChunk(c, s, tokens, tokens, bs, eagle)
						if got < 0 || got > s {
							t.Fatalf("bs %d eagle %v: (%d, %d of %d) = %d: outside [0, %d]", bs, eagle, c, s, tokens, got, s)
						}
						end := c + got
						if c < last && end < last && got%bs != 0 {
							t.Fatalf("bs %d eagle %v: (%d, %d of %d) = %d: not whole blocks short of the boundary %d", bs, eagle, c, s, tokens, got, last)
						}
						if c < last && end > last {
							t.Fatalf("bs %d eagle %v: (%d, %d of %d) = %d crosses the last boundary %d", bs, eagle, c, s, tokens, got, last)
						}
					}
				}
			}
		}
	}
}

func TestCheckMambaAlignBudget(t *testing.T) {
	if err := CheckMambaAlignBudget(2096, 2048); err == nil {
		t.Error("block 2096 over budget 2048: want an error (vLLM #36697's assertion)")
	}
	if err := CheckMambaAlignBudget(2048, 2048); err != nil {
		t.Errorf("block equal to the budget: %v", err)
	}
}
