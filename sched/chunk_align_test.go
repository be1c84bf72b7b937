package sched

import (
	"reflect"
	"slices"
	"testing"

	"statesim/model"
	"statesim/sim"
	"statesim/statecache"
)

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

// The tail stop of fine-grained prefix hits (#46384,
// Scheduler._mamba_block_aligned_split @ 6adad0876): cases worked from
// its stops, with vLLM's condition last_cache_position < tail_boundary <
// num_prompt_tokens. Each case marked stop gets AlignMambaChunk's count
// without it.
func TestAlignMambaChunkTail(t *testing.T) {
	cases := []struct {
		name                                    string
		computed, scheduled, prompt, tokens, bs int
		hash                                    int
		want                                    int
		stop                                    bool
	}{
		{"the tail stops at the last hash boundary 96", 64, 36, 100, 100, 64, 16, 32, true},
		{"a budget-cut tail past 96 stops there too", 64, 34, 100, 100, 64, 16, 32, true},
		{"from mid-tail: stops at 96", 80, 20, 100, 100, 64, 16, 16, true},
		{"hash 4: the last hash boundary is 100, the prompt's end", 64, 36, 100, 100, 64, 4, 36, false},
		{"hash 8: 96", 64, 36, 100, 100, 64, 8, 32, true},
		{"starts on the stop: the rest as is", 96, 4, 100, 100, 64, 16, 4, false},
		{"ends on the stop", 64, 32, 100, 100, 64, 16, 32, false},
		{"ends short of the stop", 64, 20, 100, 100, 64, 16, 20, false},
		{"straddles the last block boundary: ends on it", 0, 100, 100, 100, 64, 16, 64, false},
		{"a whole prompt of 96: no partial tail", 64, 32, 96, 96, 64, 16, 32, false},
		{"the hash boundary is the block boundary", 128, 2, 130, 130, 64, 16, 2, false},
		{"hash block = block: the block boundary", 64, 36, 100, 100, 64, 64, 36, false},
		{"resumed, output in the same block: stops at 96", 64, 45, 100, 110, 64, 16, 32, true},
		{"resumed past the next block: the boundary 128 leads", 64, 65, 100, 130, 64, 16, 64, false},
		{"decoding: unchanged", 100, 1, 100, 100, 64, 16, 1, false},
		{"hash 0: no stop", 64, 36, 100, 100, 64, 0, 36, false},
	}
	for _, c := range cases {
		got := AlignMambaChunkTail(c.computed, c.scheduled, c.prompt, c.tokens, c.bs, c.hash, false)
		if got != c.want {
			t.Errorf("%s: AlignMambaChunkTail(%d, %d, %d, %d, %d, %d) = %d, want %d",
				c.name, c.computed, c.scheduled, c.prompt, c.tokens, c.bs, c.hash, got, c.want)
		}
		if plain := AlignMambaChunk(c.computed, c.scheduled, c.prompt, c.tokens, c.bs, false); (plain != got) != c.stop {
			t.Errorf("%s: AlignMambaChunk gives %d, the tail stop %d: stop marked %v", c.name, plain, got, c.stop)
		}
	}
}

// Over a grid, the tail stop only ever shortens AlignMambaChunk's count,
// never to 0, never lets a chunk cross the prompt's last hash boundary
// past the last cacheable block boundary, and with the hash block equal
// to the block changes nothing.
func TestAlignMambaChunkTailInvariants(t *testing.T) {
	for _, bs := range []int{4, 16} {
		for _, hash := range []int{1, 2, 4, bs} {
			for prompt := 1; prompt <= 40; prompt++ {
				for _, extra := range []int{0, 3} {
					tokens := prompt + extra
					tail := prompt / hash * hash
					last := tokens - tokens%bs
					for c := 0; c < tokens; c++ {
						for s := 1; c+s <= tokens; s++ {
							plain := AlignMambaChunk(c, s, prompt, tokens, bs, false)
							got := AlignMambaChunkTail(c, s, prompt, tokens, bs, hash, false)
							switch {
							case got > plain || got < 0 || (plain > 0 && got == 0):
								t.Fatalf("bs %d hash %d: (%d, %d of %d/%d) = %d, AlignMambaChunk %d", bs, hash, c, s, prompt, tokens, got, plain)
							case hash == bs && got != plain:
								t.Fatalf("bs %d = hash: (%d, %d of %d/%d) = %d, AlignMambaChunk %d", bs, c, s, prompt, tokens, got, plain)
							case last < tail && tail < prompt && c < tail && c+got > tail:
								t.Fatalf("bs %d hash %d: (%d, %d of %d/%d) = %d crosses the tail boundary %d", bs, hash, c, s, prompt, tokens, got, tail)
							}
						}
					}
				}
			}
		}
	}
}

// The scheduler cuts at the tail stop only with MambaPartialCacheHit: a
// 30-token prompt over 16-token blocks and 4-token hashes runs as 16 (to
// the last block boundary), 12 (to the last hash boundary, 28) and 2;
// without fine-grained hits as 16 and 14. A running request's chunk and
// a waiting one's both go through Config.alignChunk.
func TestSchedulerTailStop(t *testing.T) {
	for _, tc := range []struct {
		partial bool
		want    []int
	}{{true, []int{16, 12, 2}}, {false, []int{16, 14}}} {
		sh, err := model.Preset("tiny-hybrid")
		if err != nil {
			t.Fatal(err)
		}
		l := sh.Layout(16)
		kv, err := statecache.NewKVCacheManagerWith(&l, 64, statecache.ManagerOptions{EnablePrefixCaching: true, MambaCacheMode: statecache.MambaAlign})
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{MaxNumBatchedTokens: 64, MaxNumSeqs: 4, MaxModelLen: 400, EnableChunkedPrefill: true,
			MambaAlignBlockSize: 16, HashBlockSize: 4, MambaPartialCacheHit: tc.partial}
		s := New(cfg, kv, V028, nil)
		addReq(s, 0, 30, 5)
		var got []int
		for step := 0; step < 8 && len(got) < len(tc.want)+1; step++ {
			out, err := s.Schedule(sim.Time(step))
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Rows) == 1 && out.Rows[0].NumComputed < 30 {
				got = append(got, out.Rows[0].NumScheduled)
			}
			if _, err := s.Update(out, sim.Time(step)+1); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("partial %v: prefill chunks %v, want %v", tc.partial, got, tc.want)
		}
	}
}

// chunksOf is the prefill chunks AlignMambaChunkStops gives a prompt of
// numPrompt tokens scheduled step after step, maxPrefill tokens offered
// each time.
func chunksOf(numPrompt, blockSize, hashBlock, maxPrefill int, eagle bool) []int {
	var out []int
	for start := 0; start < numPrompt && len(out) < 64; {
		n := AlignMambaChunkStops(start, min(maxPrefill, numPrompt-start), numPrompt, numPrompt, blockSize, hashBlock, maxPrefill, eagle)
		out = append(out, n)
		if n == 0 {
			break
		}
		start += n
	}
	return out
}

// TestAlignMambaChunkStops: vLLM's cases for #50000's sub-block progress
// (test_prefill_chunk_alignment.py @ 6adad0876,
// test_mamba_align_split_when_block_exceeds_scheduling_budget and
// ..._long_prefill_threshold), #51113's end floored to the grid up to
// the prefill's last chunk, a partial hit's resume stopping at the next
// boundary, and the fine-grained tail stop.
func TestAlignMambaChunkStops(t *testing.T) {
	for _, c := range []struct {
		name                                   string
		prompt, block, hash, maxPrefill, start int
		eagle                                  bool
		want                                   []int
	}{
		{"block wider than the budget advances inside it", 30000, 11392, 0, 8192, 0, false, []int{8192, 3200, 8192, 3200, 7216}},
		{"block wider than the long-prefill threshold", 1300, 512, 0, 384, 0, false, []int{384, 128, 384, 128, 276}},
		{"a budget-clipped tail chunk waits (#51113)", 100, 32, 0, 40, 0, false, []int{32, 32, 32, 4}},
	} {
		if got := chunksOf(c.prompt, c.block, c.hash, c.maxPrefill, c.eagle); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: chunks %v, want %v", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		name                                                 string
		computed, n, prompt, tokens, block, hash, maxPrefill int
		eagle                                                bool
		want                                                 int
	}{
		{"the whole block fits the budget: a sub-block end rounds to 0", 0, 8192, 30000, 30000, 11392, 0, 11392, false, 0},
		{"a partial hit's resume stops at the next boundary", 68, 100, 200, 200, 32, 4, 256, false, 28},
		{"a resume inside the last block runs to the prompt's end", 196, 4, 200, 200, 32, 4, 256, false, 4},
		{"the tail stop: the prompt's last hash boundary past the last block boundary", 64, 26, 90, 90, 32, 8, 256, false, 24},
		{"no tail stop without fine-grained hits", 64, 26, 90, 90, 32, 0, 256, false, 26},
		{"under EAGLE the last cacheable boundary is a block back", 0, 100, 100, 100, 32, 0, 256, true, 64},
		{"past prefill: unchanged", 100, 3, 100, 101, 32, 0, 256, false, 3},
		{"a budget-clipped tail before #51113 would run: here it waits", 96, 3, 100, 100, 32, 0, 256, false, 0},
	} {
		if got := AlignMambaChunkStops(c.computed, c.n, c.prompt, c.tokens, c.block, c.hash, c.maxPrefill, c.eagle); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestMarconiStop: #37898 cuts a looked-up request's chunk to the
// uncached shared tokens in whole blocks, a block or more of them;
// #47782 stops any chunk crossing the stored junction on the last block
// boundary before it.
func TestMarconiStop(t *testing.T) {
	for _, c := range []struct {
		name                                   string
		m                                      Marconi
		computed, n, boundary, uncached, block int
		want                                   int
	}{
		{"hint: 70 uncached tokens, 2 blocks", MarconiHint, 0, 128, 0, 70, 32, 64},
		{"hint under a block: no cut", MarconiHint, 0, 128, 0, 20, 32, 128},
		{"hint not past the chunk: no cut", MarconiHint, 0, 64, 0, 70, 32, 64},
		{"boundary 70: stop at 64", MarconiBoundary, 0, 128, 70, 0, 32, 64},
		{"boundary crossed later, from 64: under a block to go", MarconiBoundary, 64, 64, 70, 0, 32, 64},
		{"boundary past the chunk", MarconiBoundary, 0, 64, 70, 0, 32, 64},
		{"off", MarconiOff, 0, 128, 70, 70, 32, 128},
	} {
		if got := MarconiStop(c.m, c.computed, c.n, c.boundary, c.uncached, c.block); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
