package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"statesim/invariant"
	"statesim/report"
	"statesim/scenarios"
	"statesim/sched"
	"statesim/setup"
	"statesim/statecache"
	"statesim/step"
)

// prefixScenario is an attention-only run with prefix caching on, block
// size 16, over a workload given as YAML lines.
func prefixScenario(t *testing.T, blocks int, workload string, sets ...string) *scenarios.Scenario {
	t.Helper()
	y := fmt.Sprintf(`name: prefix
seed: 7
model: {preset: tiny-attention}
engine:
  vllm_version: fixed
  max_num_batched_tokens: 2048
  max_num_seqs: 64
  max_model_len: 4096
  block_size: 16
  num_gpu_blocks_override: %d
  enable_prefix_caching: true
workload:
%s
`, blocks, workload)
	sc, err := scenarios.Parse([]byte(y), "prefix.yaml", sets)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// Two prompts of 100 tokens, four rollouts each, all submitted at once.
// The first rollout of each prompt misses and caches its 6 full blocks
// when it is allocated; the other three, scheduled in the same step, hit
// all 6 (96 tokens: under the cap of 99). Worked by hand: 8 lookups of
// 100 tokens, 6 × 96 = 576 tokens hit.
func TestRolloutsHitExactly(t *testing.T) {
	sc := prefixScenario(t, 400, `  kind: rollouts
  prompts: 2
  rollouts_per_prompt: 4
  steps: 1
  prompt_len: {dist: constant, value: 100}
  output_len: {dist: constant, value: 10}`)
	var stepHits, stepQueries int64
	rep, err := Run(sc, Options{Observe: func(r *step.Record) { stepHits += r.PrefixHits; stepQueries += r.PrefixQueries }})
	if err != nil {
		t.Fatal(err)
	}
	pc := rep.PrefixCache
	if pc == nil {
		t.Fatal("no prefix_cache section with enable_prefix_caching on")
	}
	if pc.Requests != 8 || pc.QueryTokens != 800 || pc.HitTokens != 576 || pc.HitRate != 0.72 {
		t.Errorf("prefix cache %+v: want 8 lookups, 800 query tokens, 576 hit (0.72)", *pc)
	}
	if stepHits != pc.HitTokens || stepQueries != pc.QueryTokens {
		t.Errorf("step records sum to %d hits of %d queries, the report says %d of %d", stepHits, stepQueries, pc.HitTokens, pc.QueryTokens)
	}
	if len(pc.Groups) != 1 || pc.Groups[0].HitTokens != 576 {
		t.Errorf("groups %+v: want the one attention group with 576 hit tokens", pc.Groups)
	}
	if rep.TotalViolations() != 0 || rep.Finished != 8 {
		t.Errorf("%d violations, %d finished: %+v", rep.TotalViolations(), rep.Finished, rep.Violations)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "prefix cache: 576 of 800 prompt tokens hit (72.0%)") {
		t.Errorf("text report lacks the prefix cache line:\n%s", b.String())
	}
}

// The same workload with caching off looks nothing up and has no
// prefix_cache section (so reports of runs without caching are as before).
func TestPrefixCachingOffNoSection(t *testing.T) {
	sc := prefixScenario(t, 400, `  kind: rollouts
  prompts: 2
  rollouts_per_prompt: 4
  steps: 1
  prompt_len: {dist: constant, value: 100}
  output_len: {dist: constant, value: 10}`, "engine.enable_prefix_caching=false")
	rep, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.PrefixCache != nil {
		t.Errorf("prefix_cache section %+v with caching off", *rep.PrefixCache)
	}
}

// Every KV read through a hit is served by a block whose record matches
// (no violation, the hit check on), over generated shared-prefix workloads
// (rollouts, multi-turn sessions with a system prompt) on pools small
// enough to evict cached blocks and preempt, both free orders; and the
// runs hit. The check shortcuts agree with the plain checks.
func TestSharedPrefixReadsAreServed(t *testing.T) {
	loads := []string{
		`  kind: rollouts
  prompts: 3
  rollouts_per_prompt: 5
  steps: 3
  prompt_len: {dist: lognormal, median: 200, sigma: 0.7, min: 8, max: 900}
  output_len: {dist: lognormal, median: 40, sigma: 0.6, min: 1, max: 300}`,
		`  kind: sessions
  sessions: 6
  turns_per_session: 4
  think_time_s: 0.01
  system_prompt_tokens: 70
  prompt_len: {dist: lognormal, median: 60, sigma: 0.6, min: 1, max: 300}
  output_len: {dist: lognormal, median: 30, sigma: 0.6, min: 1, max: 200}`,
	}
	for li, load := range loads {
		for _, blocks := range []int{90, 2000} {
			for _, version := range []string{"v0.19", "fixed"} { // to-tail, fresh-to-head
				for seed := 1; seed <= 4; seed++ {
					name := fmt.Sprintf("load%d/blocks%d/%s/seed%d", li, blocks, version, seed)
					sc := prefixScenario(t, blocks, load, "engine.vllm_version="+version, fmt.Sprintf("seed=%d", seed))
					rep, err := Run(sc, Options{})
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if rep.TotalViolations() != 0 {
						t.Errorf("%s: %d violations: %+v", name, rep.TotalViolations(), rep.Violations)
					}
					if rep.PrefixCache == nil || rep.PrefixCache.HitTokens == 0 {
						t.Errorf("%s: no hits: %+v", name, rep.PrefixCache)
					}
					plain, err := Run(sc, Options{plainChecks: true})
					if err != nil {
						t.Fatal(err)
					}
					if a, b := reportJSON(t, rep), reportJSON(t, plain); a != b {
						t.Errorf("%s: the check shortcuts and the plain checks disagree", name)
					}
				}
			}
		}
	}
}

func reportJSON(t *testing.T, r *report.Report) string {
	t.Helper()
	var b strings.Builder
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// swapHits is V1 with a broken prefix cache: a request that hit two or
// more blocks gets its first two in the wrong order, so its first block
// holds the prefix of 32 tokens where the reader needs 16.
type swapHits struct{ done bool }

func (*swapHits) Name() string { return "v1-swapped-hits" }

func (p *swapHits) Schedule(st *sched.State, out *sched.Output) error {
	if err := (sched.V1Policy{}).Schedule(st, out); err != nil {
		return err
	}
	for i := range out.Rows {
		t := &out.Rows[i].Req.Blocks
		if !p.done && t.HitBlocks() >= 2 && !t.HitChecked() {
			t.Attn[0][0], t.Attn[0][1] = t.Attn[0][1], t.Attn[0][0]
			p.done = true
		}
	}
	return nil
}

// The minimal break: one wrong block from the prefix cache is one
// stale-slot-read, naming the reader, the block, what its record holds and
// what the reader needed.
func TestWrongHitBlockIsCaught(t *testing.T) {
	sc := prefixScenario(t, 400, `  kind: rollouts
  prompts: 1
  rollouts_per_prompt: 2
  steps: 1
  prompt_len: {dist: constant, value: 40}
  output_len: {dist: constant, value: 2}`)
	rep, err := Run(sc, Options{Policy: &swapHits{}})
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.Count(invariant.StaleSlotRead); n != 1 || rep.TotalViolations() != 1 {
		t.Fatalf("stale-slot-read %d, all %d; want exactly one: %+v", n, rep.TotalViolations(), rep.Violations)
	}
	v := rep.Violations[0]
	if v.RequestID != 1 || v.PrevOwner != 0 || !strings.Contains(v.Detail, "through a prefix hit") ||
		!strings.Contains(v.Detail, "of 32 tokens (written by request 0") || !strings.Contains(v.Detail, "reader needs") {
		t.Errorf("violation %s: want request 1 reading request 0's 32-token block where it needs 16", v.String())
	}
	// The same run with the cache intact is clean.
	if rep, err := Run(sc, Options{}); err != nil || rep.TotalViolations() != 0 {
		t.Errorf("intact run: %v, %+v", err, rep.Violations)
	}
}

// The Mamba cache mode settles as vLLM's resolution does, the block size
// follows the mode (all: a multiple of the Mamba kernel's chunk, 2048 on
// Mamba1, or of mamba_block_size), and a mode vLLM would refuse is an
// error naming the file, line and field.
func TestHybridMambaCacheModeKnobs(t *testing.T) {
	const base = "name: h\nmodel: {preset: tiny-hybrid}\nengine: {%s num_gpu_blocks_override: 100, max_model_len: 2048}\nworkload: {kind: poisson, rate: 1, count: 1}\n"
	for _, c := range []struct {
		engine, err string
		pc          bool
		mode        statecache.MambaCacheMode
		block       int
	}{
		{"vllm_version: v0.31,", "", true, statecache.MambaAlign, 32},                              // #50991's default
		{"vllm_version: v0.27,", "", false, statecache.MambaNone, 32},                              // before it
		{"vllm_version: v0.27, enable_prefix_caching: true,", "", true, statecache.MambaAll, 2048}, // Mamba1 supports all (#26377)
		{"vllm_version: v0.31, mamba_cache_mode: all,", "", true, statecache.MambaAll, 2048},
		// mamba_block_size is all mode's chunk: lcm(8, 16)·cdiv(state, 16).
		{"vllm_version: v0.31, mamba_cache_mode: all, mamba_block_size: 8,", "", true, statecache.MambaAll, 32},
		{"vllm_version: v0.31, enable_prefix_caching: false, mamba_cache_mode: align,", "", false, statecache.MambaNone, 32},
		{"vllm_version: v0.13, mamba_cache_mode: align,", "h.yaml:3: field engine.mamba_cache_mode: mamba_cache_mode \"align\": vLLM v0.13 has no such option", false, 0, 0},
		{"mamba_cache_mode: some,", "h.yaml:3: field engine.mamba_cache_mode: unknown mamba_cache_mode \"some\"", false, 0, 0},
		{"mamba_block_size: 8,", "h.yaml:3: field engine.mamba_block_size: must be 0 or the unified block size (32 for block_size 16), got 8", false, 0, 0},
		{"mamba_cache_mode: all, mamba_block_size: -1,", "h.yaml:3: field engine.mamba_block_size: must be in [0, max_model_len 2048]", false, 0, 0},
		{"mamba_cache_mode: all, mamba_block_size: 4611686018427387904,", "h.yaml:3: field engine.mamba_block_size: must be in [0, max_model_len 2048]", false, 0, 0},
		{"enable_prefix_caching: true, mamba_cache_mode: align, enable_chunked_prefill: false,", "needs enable_chunked_prefill", false, 0, 0},
		// Start-up checks of align mode before #50000 (#34445, #35122);
		// from it the split advances inside the block.
		{"vllm_version: v0.22, enable_prefix_caching: true, mamba_cache_mode: align, max_num_batched_tokens: 8,", "field engine.max_num_batched_tokens: mamba_cache_mode align: block_size 32 must be <= max_num_batched_tokens 8", false, 0, 0},
		{"vllm_version: v0.22, enable_prefix_caching: true, mamba_cache_mode: align, long_prefill_token_threshold: 16,", "field engine.long_prefill_token_threshold: mamba_cache_mode align: long_prefill_token_threshold 16 must be >= block_size 32", false, 0, 0},
		{"enable_prefix_caching: true, max_num_batched_tokens: 8,", "", true, statecache.MambaAlign, 32},
	} {
		st, err := setup.Parse([]byte(fmt.Sprintf(base, c.engine)), "h.yaml", nil)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: got %v, want %q", c.engine, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.engine, err)
			continue
		}
		if res := st.Mamba; res.PrefixCaching != c.pc || res.Mode != c.mode {
			t.Errorf("%s: resolved %+v, want prefix caching %v in mode %v", c.engine, res, c.pc, c.mode)
		}
		if bs := st.Layout.BlockSize; bs != c.block {
			t.Errorf("%s: block size %d, want %d", c.engine, bs, c.block)
		}
	}
}

// A finding of the model (not confirmed on vLLM): under the priority
// policy, a running request scheduled earlier in the step can be the
// victim of a later request's failed allocation (equal keys: Python's max
// takes the first, the running list's head). vLLM un-schedules it, but
// allocate_slots has already cached the blocks its chunk would fill, and
// free() keeps their hashes (kv_cache_manager.py @ 003df296): those blocks
// were never written, yet a later lookup hits them. Here request 0 (150
// tokens, chunks of 48) is preempted at step 2 after caching blocks 6-8;
// re-admitted, it hits them and reads zeros. vLLM #41400 (closed) tracked
// the same class: blocks cached whose GPU writes never ran.
func TestPriorityPreemptionPoisonsPrefixCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.jsonl")
	recs := "{\"timestamp\": 0, \"input_tokens\": 150, \"output_tokens\": 4}\n{\"timestamp\": 0, \"input_tokens\": 64, \"output_tokens\": 2}\n"
	if err := os.WriteFile(path, []byte(recs), 0o644); err != nil {
		t.Fatal(err)
	}
	y := fmt.Sprintf(`name: priority-poison
model: {preset: tiny-attention}
engine: {vllm_version: fixed, max_num_batched_tokens: 80, long_prefill_token_threshold: 48, max_num_seqs: 8, max_model_len: 1000, num_gpu_blocks_override: 14, scheduling_policy: priority, enable_prefix_caching: true}
workload: {kind: trace, path: %s, format: jsonl, time_unit: s, prompt_len: {dist: trace}, output_len: {dist: trace}}
`, path)
	run := func(sets ...string) *report.Report {
		sc, err := scenarios.Parse([]byte(y), "priority-poison.yaml", sets)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(sc, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := run()
	if rep.TotalViolations() != 1 || rep.Count(invariant.StaleSlotRead) != 1 || rep.Preemptions != 1 {
		t.Fatalf("%d violations, %d preemptions: %+v; want one stale-slot-read after one preemption", rep.TotalViolations(), rep.Preemptions, rep.Violations)
	}
	if v := rep.Violations[0]; v.RequestID != 0 || v.PrevOwner != 0 || !strings.Contains(v.Detail, "through a prefix hit") || !strings.Contains(v.Detail, "never written") {
		t.Errorf("violation %s: want request 0 reading its own never-written block through a hit", v.String())
	}
	for _, set := range []string{"engine.scheduling_policy=fcfs", "engine.enable_prefix_caching=false"} {
		if rep := run(set); rep.TotalViolations() != 0 {
			t.Errorf("%s: %+v", set, rep.Violations)
		}
	}
}

// A prefix-hit block that a wrapped state write damaged is reported once,
// at the first check after the write: the reader carries the damage from
// there, as with its own blocks. (Reports used to repeat at every later
// check: every step under the plain checks, after every unrelated wrapped
// write under the shortcuts.) Align mode on a 24-bit index under
// pressure: requests preempted and resumed through hits on their own
// blocks, which later wrapped writes clobber.
func TestDamagedHitReportedOnce(t *testing.T) {
	sc, err := scenarios.Load("azure-conv", []string{"workload.limit=1000", "workload.rate_scale=6", "engine.num_gpu_blocks_override=900",
		"engine.state_index_bits=24", "engine.vllm_version=v0.31", "engine.enable_prefix_caching=true"})
	if err != nil {
		t.Fatal(err)
	}
	type damage struct {
		req, slot int64
		detail    string // names the block, its writer and the write that damaged it
	}
	seen := map[damage]int64{}
	hits := 0
	if _, err := Run(sc, Options{Observe: func(rec *step.Record) {
		for _, v := range rec.Violations {
			if !strings.Contains(v.Detail, "through a prefix hit") {
				continue
			}
			hits++
			d := damage{v.RequestID, v.Slot, v.Detail}
			if at, ok := seen[d]; ok {
				t.Errorf("step %d reports again what step %d did: %s", v.Step, at, v.Detail)
			}
			seen[d] = v.Step
		}
	}}); err != nil {
		t.Fatal(err)
	}
	if hits < 5 {
		t.Fatalf("%d damaged hit blocks reported: the scenario no longer damages hits", hits)
	}
}
