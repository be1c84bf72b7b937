package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"statesim/invariant"
	"statesim/scenarios"
	"statesim/statecache"
	"statesim/step"
)

// vLLM PR #57908 (open) says align mode's kernels write a full
// block-aligned prefix hit's terminal block in place, and a producer's
// block the step after it publishes it, so both need copy-on-write. At
// the releases statesim models (and at later main) neither runner does
// it: the kernels address block (seq_len − 1) // B onward
// (mamba_get_block_table_tensor, vllm/v1/attention/backends/utils.py
// @ 6adad0876), and a row that resumes from a hit of h = n·B tokens, or
// continues past a boundary it published, has seq_len ≥ h + 1, so it
// writes block n or later; the hit block n − 1 is only the copy source
// (V1: preprocess_mamba's prev_state_idx = (h − 1) // B, curr =
// cdiv(h + T, B) − 1, vllm/v1/worker/mamba_utils.py @ 6adad0876 lines
// 1203-1248; V2: preprocess_mamba_align_fused_kernel's src column from
// add_request's seed, dst = ceil(computed_after / B) − 1, lines 415-427,
// gpu/model_states/mamba_hybrid.py lines 101-105). With MTP the post-step
// copy (postprocess_mamba_fused_kernel, lines 341-350: dest = aligned / B
// − 1, aligned past the running state's tokens) fills a boundary's block
// in the step that caches it or the one before, never after.
//
// These tests hold statesim's model to the same mechanism, from the step
// records and, once the run has ended, the pool's cache records and the
// blocks' provenance.

// alignedHitRollouts is hybridRollouts on tiny-hybrid-mamba2 (32-token
// blocks; the 150-token prompts' rollouts hit 128 tokens, four full
// blocks) in align mode under runner, with MTP K = mtpK when mtpK > 0,
// and outputs long enough to publish boundaries while decoding (160,
// 192, 224). The pool of 400 blocks never evicts or preempts, so every
// block cached in the run is still cached when it ends.
func alignedHitRollouts(t *testing.T, runner string, mtpK int) *scenarios.Scenario {
	sets := []string{"model.preset=tiny-hybrid-mamba2", "engine.model_runner=" + runner, "workload.output_len.value=80"}
	if mtpK > 0 {
		sets = append(sets, "engine.speculative.method=mtp", fmt.Sprintf("engine.speculative.num_speculative_tokens=%d", mtpK),
			"engine.speculative.acceptance_rate=0.6", "engine.patches=[+55898]")
	}
	return hybridRollouts(t, "align", 40, sets...)
}

// stateRow is what the test keeps of one row of a step record.
type stateRow struct {
	step                             int64
	req                              int64
	computed, scheduled, drafts, pre int
	first                            bool // the request's first row
	blocks                           []int32
}

// cachedState is a Mamba block the prefix cache lists when the run ends:
// its cache record and its bytes' provenance.
type cachedState struct {
	group int // Mamba group
	rec   statecache.PrefixRecord
	prov  statecache.Provenance
}

// alignedHitRun runs sc and returns its report, its rows and the Mamba
// blocks cached at the end, by block id; it fails the test on a run
// error, a violation, an unfinished request, a preemption or an eviction
// (the checks below need every cached block to stay cached).
func alignedHitRun(t *testing.T, name string, sc *scenarios.Scenario, o Options) (rows []stateRow, cached map[int32]cachedState, blockSize int) {
	t.Helper()
	seen := map[int64]bool{}
	var evicted int64
	o.Observe = func(rec *step.Record) {
		evicted += rec.EvictedBlocks
		for _, x := range rec.Rows {
			rows = append(rows, stateRow{step: rec.Step, req: x.RequestID, computed: x.NumComputed, scheduled: x.NumScheduled,
				drafts: x.NumDrafts, pre: x.NumPreemptions, first: !seen[x.RequestID], blocks: slices.Clone(x.StateBlocks)})
			seen[x.RequestID] = true
		}
	}
	o.ended = func(r *runner) { cached, blockSize = cachedMambaStates(r), r.kv.BlockSize() }
	rep, err := Run(sc, o)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if rep.TotalViolations() != 0 || rep.Finished != rep.Requests || evicted != 0 {
		t.Fatalf("%s: %d/%d finished, %d evictions, violations %+v", name, rep.Finished, rep.Requests, evicted, rep.Violations)
	}
	for _, x := range rows {
		if x.pre != 0 {
			t.Fatalf("%s: request %d was preempted", name, x.req)
		}
	}
	return rows, cached, blockSize
}

// cachedMambaStates is every Mamba block the prefix cache lists once r
// has ended, by block id.
func cachedMambaStates(r *runner) map[int32]cachedState {
	groupOf := map[int32]int{}
	for g := range r.layout.NumMambaGroups() {
		groupOf[r.kv.MambaPoolGroup(g)] = g
	}
	cached := map[int32]cachedState{}
	for b := int32(1); b < int32(r.nBlocks); b++ {
		rec := r.kv.Pool.Record(b)
		if g, ok := groupOf[rec.Group]; ok && rec.Cached {
			cached[b] = cachedState{group: g, rec: rec, prov: r.sym.Prov.Get(b)}
		}
	}
	return cached
}

// cachedStateMismatches lists the cached Mamba blocks whose bytes are
// not the state the cache lists them for: the state of the request that
// cached it after exactly the tokens its hash covers. A kernel that wrote
// a cached block in place after it was cached (a resumed request in its
// hit block, a producer in the boundary it published, a draft column)
// leaves another writer or token count there.
func cachedStateMismatches(cached map[int32]cachedState) []string {
	var bad []string
	for b, c := range cached {
		p := c.prov
		if p.Content != statecache.State || p.Writer != c.rec.Writer || p.Tokens != c.rec.Tokens || p.Tainted {
			bad = append(bad, fmt.Sprintf("block %d (Mamba group %d) is cached as request %d's state after %d tokens (step %d) but holds %s",
				b, c.group, c.rec.Writer, c.rec.Tokens, c.rec.Step, p.Describe(-1)))
		}
	}
	slices.Sort(bad)
	return bad
}

// A request resuming from a full block-aligned hit restores into a block
// other than the hit block; no row writes a block cached before its step;
// a producer's block published at an aligned boundary is not its next
// step's running block; and every cached block still holds the state it
// was cached for when the run ends. Under V1 and V2, without and with
// MTP (K = 1).
func TestAlignedHitWritesNoCachedBlock(t *testing.T) {
	for _, runner := range []string{"v1", "v2"} {
		for _, k := range []int{0, 1} {
			name := fmt.Sprintf("runner %s, MTP K = %d", runner, k)
			rows, cached, bs := alignedHitRun(t, name, alignedHitRollouts(t, runner, k), Options{})
			if bad := cachedStateMismatches(cached); len(bad) > 0 {
				t.Errorf("%s: %d cached blocks overwritten, first: %s", name, len(bad), bad[0])
			}
			problems, hits, published := alignedHitProblems(rows, cached, bs)
			for _, p := range problems {
				t.Errorf("%s: %s", name, p)
			}
			t.Logf("%s: %d rows, %d cached Mamba blocks, %d resumed, %d published", name, len(rows), len(cached), hits, published)
			if hits == 0 || published == 0 {
				t.Errorf("%s: %d resumed requests, %d boundaries published by a request that went on: the run shows neither mechanism", name, hits, published)
			}
		}
	}
}

// alignedHitProblems checks the rows against the blocks cached at the end
// (none evicted, so every block cached in the run): no row's running block
// was cached before its step; a resumed request's hit is whole blocks,
// cached before it, and it runs in none of the hit's blocks; a row ending
// on a boundary (no drafts) leaves its running block cached for it, and
// its request's next row runs elsewhere. It counts the resumed requests
// and the boundaries published by a request that went on.
func alignedHitProblems(rows []stateRow, cached map[int32]cachedState, bs int) (problems []string, hits, published int) {
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	for i, x := range rows {
		for g, b := range x.blocks {
			if c, ok := cached[b]; ok && c.rec.Step < x.step {
				bad("step %d: request %d's running block %d in Mamba group %d was cached at step %d (request %d's state after %d tokens)",
					x.step, x.req, b, g, c.rec.Step, c.rec.Writer, c.rec.Tokens)
			}
		}
		if x.first && x.computed > 0 {
			hits++
			if x.computed%bs != 0 {
				bad("request %d resumes from %d tokens, not a whole number of %d-token blocks", x.req, x.computed, bs)
			}
			for g, b := range x.blocks {
				candidates := 0
				for hb, c := range cached {
					if c.group == g && int(c.rec.Tokens) == x.computed && c.rec.Step < x.step {
						candidates++
						if hb == b {
							bad("step %d: request %d resumes from a %d-token hit into block %d of Mamba group %d, the hit block itself",
								x.step, x.req, x.computed, b, g)
						}
					}
				}
				if candidates == 0 {
					bad("request %d resumes from %d tokens in Mamba group %d with no block cached for them", x.req, x.computed, g)
				}
			}
		}
		if end := x.computed + x.scheduled; x.drafts == 0 && end%bs == 0 {
			next := slices.IndexFunc(rows[i+1:], func(y stateRow) bool { return y.req == x.req })
			for g, b := range x.blocks {
				if c, ok := cached[b]; !ok || int(c.rec.Tokens) != end {
					bad("step %d: request %d's block %d of Mamba group %d, which ends at %d tokens, is not cached for them (%+v)",
						x.step, x.req, b, g, end, c.rec)
				}
				if next >= 0 && rows[i+1+next].blocks[g] == b {
					bad("step %d: request %d runs in block %d of Mamba group %d, which it published at step %d after %d tokens",
						rows[i+1+next].step, x.req, b, g, x.step, end)
				}
			}
			if next >= 0 {
				published++
			}
		}
	}
	return problems, hits, published
}

// alignedHitProblems fails on the writes #57908 describes: a resumed
// request running in its hit block, and a producer running on in the
// block it has just published.
func TestAlignedHitProblemsCatch(t *testing.T) {
	const bs = 32
	cached := map[int32]cachedState{
		7: {group: 0, rec: statecache.PrefixRecord{Writer: 1, Step: 5, Tokens: 128, Cached: true}},
	}
	// Request 1's rows from the chunk that ends at 128 tokens on (its
	// earlier ones left out); request 2 shares its prompt.
	producer := []stateRow{
		{step: 5, req: 1, computed: 96, scheduled: 32, blocks: []int32{7}},
		{step: 6, req: 1, computed: 128, scheduled: 22, blocks: []int32{7}}, // runs on in the block it published
	}
	consumer := []stateRow{
		{step: 5, req: 1, computed: 96, scheduled: 32, blocks: []int32{7}},
		{step: 6, req: 1, computed: 128, scheduled: 22, blocks: []int32{8}},
		{step: 9, req: 2, computed: 128, scheduled: 22, first: true, blocks: []int32{7}}, // resumes in the hit block
	}
	for _, c := range []struct {
		name string
		rows []stateRow
		want []string
	}{
		{"producer", producer, []string{"step 6: request 1's running block 7 in Mamba group 0 was cached at step 5",
			"step 6: request 1 runs in block 7 of Mamba group 0, which it published at step 5 after 128 tokens"}},
		{"consumer", consumer, []string{"step 9: request 2's running block 7 in Mamba group 0 was cached at step 5",
			"step 9: request 2 resumes from a 128-token hit into block 7 of Mamba group 0, the hit block itself"}},
	} {
		problems, _, _ := alignedHitProblems(c.rows, cached, bs)
		for _, w := range c.want {
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, w) }) {
				t.Errorf("%s: want a problem starting %q, got %q", c.name, w, problems)
			}
		}
	}
	fixed := slices.Clone(consumer)
	fixed[2].blocks = []int32{9}
	if problems, hits, published := alignedHitProblems(fixed, cached, bs); len(problems) != 0 || hits != 1 || published != 1 {
		t.Errorf("fixed: %q, %d resumed, %d published; want none, 1, 1", problems, hits, published)
	}
}

// The checks can fail: without chunk alignment a chunk ending mid-block
// leaves a boundary's cached block holding a state of fewer tokens
// (TestMambaAlignUnalignedChunksCaughtOnRestore), and the end-of-run
// comparison of the cache's records with the bytes names it.
func TestAlignedHitCachedStateCheckCatches(t *testing.T) {
	var cached map[int32]cachedState
	o := Options{noChunkAlign: true, ended: func(r *runner) { cached = cachedMambaStates(r) }}
	rep, err := Run(alignedHitRollouts(t, "v1", 0), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count(invariant.StaleSlotRead) == 0 {
		t.Fatalf("unaligned chunks: no stale-slot-read: %+v", rep.Violations)
	}
	if bad := cachedStateMismatches(cached); len(bad) == 0 {
		t.Errorf("unaligned chunks: every one of %d cached Mamba blocks holds the state it is cached for", len(cached))
	}
}
