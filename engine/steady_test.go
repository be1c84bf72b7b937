package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"

	"statesim/scenarios"
	"statesim/step"
)

// The bulk replay of steady decode steps is invisible: every report, text
// and JSON, is byte-identical to stepping one by one, on clean runs, on
// runs where bug A or bug B fires, under preemption, chunked prefill, the
// priority policy, CUDA graphs, a step limit that stops a run mid-bulk, a
// closed-loop workload, and with prefix caching (which keeps to single
// steps). Where bulk steps are possible the test requires that some were
// taken, so that it compares two paths and not one with itself.
func TestBulkMatchesStepByStep(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		sets []string
		bulk bool // the run must take bulk steps
	}{
		{"azure-conv", []string{"workload.limit=300"}, true},
		// Preemptions, chunked prefills, bug A on a small pool, then a
		// wrapping index, v0.14 and the priority policy.
		{"azure-conv", []string{"workload.limit=500", "workload.rate_scale=6", "engine.num_gpu_blocks_override=700"}, true},
		{"azure-conv", []string{"workload.limit=400", "workload.rate_scale=6", "engine.num_gpu_blocks_override=900",
			"engine.state_index_bits=24", "engine.vllm_version=v0.14", "engine.scheduling_policy=priority"}, true},
		{"azure-conv", []string{"workload.limit=300", "engine.vllm_version=v0.19"}, true},
		{"azure-conv", []string{"workload.limit=300", "model.preset=attention-only-3b", "engine.enable_prefix_caching=false"}, true},
		// Prefix caching: blocks cached as decodes fill them, hits on
		// shared prompts, evictions and preemptions on small pools.
		{"azure-conv", []string{"workload.limit=300", "model.preset=attention-only-3b", "engine.enable_prefix_caching=true"}, true},
		{"azure-conv", []string{"workload.limit=600", "workload.rate_scale=6", "model.preset=attention-only-3b", "engine.enable_prefix_caching=true",
			"engine.num_gpu_blocks_override=700"}, true},
		{"sessions-chat", []string{"workload.sessions=16", "workload.turns_per_session=3"}, true},
		{"rollouts-shared-prefix", []string{"workload.prompts=2", "workload.rollouts_per_prompt=8", "workload.steps=2", "engine.num_gpu_blocks_override=1500"}, true},
		{"mooncake-attention", []string{"workload.limit=60"}, true},
		// FULL decode graphs replaying the persistent state-index buffer.
		{"azure-conv", []string{"workload.limit=300", "engine.cudagraph_mode=full_and_piecewise", "engine.vllm_version=v0.31", "engine.enable_prefix_caching=false"}, true},
		// The step limit reached inside a stretch of steady steps.
		{"azure-conv", []string{"workload.limit=200", "checks.max_steps=7777"}, true},
		// 1 ns steps: arrivals land on step ends (a bulk stops before
		// the step that would reach one).
		{"azure-conv", []string{"workload.limit=400", "workload.rate_scale=1e6", "timing.step_overhead_us=0.001", "timing.prefill_token_ns=0",
			"timing.decode_row_ns=0", "timing.context_token_ns=0", "timing.state_bandwidth_gbs=1e9"}, true},
		{"imposter", nil, true},
		{"wrap32", []string{"workload.steps=2", "workload.prompts=32", "engine.state_index_bits=30"}, true},
		{"sessions-chat", []string{"workload.sessions=16", "workload.turns_per_session=3", "engine.enable_prefix_caching=false"}, true},
		// A hybrid's Mamba cache modes: per-block states, boundary
		// snapshots cached as decodes fill blocks, align's copy source
		// released a step after its copy; hits, evictions and
		// preemptions on small pools.
		{"mooncake-hybrid", []string{"workload.limit=25", "engine.enable_prefix_caching=true"}, true},
		{"mooncake-hybrid", []string{"workload.limit=25", "engine.enable_prefix_caching=true", "engine.mamba_cache_mode=align"}, true},
		// async asked for but turned off by Mamba prefix caching (all mode,
		// #33352): the run is synchronous, so it replays in bulk too.
		{"mooncake-hybrid", []string{"workload.limit=25", "engine.enable_prefix_caching=true", "engine.mamba_cache_mode=all", "engine.async_scheduling=true"}, true},
		{"azure-conv", []string{"workload.limit=100", "workload.rate_scale=3", "engine.enable_prefix_caching=true"}, true},
		{"azure-conv", []string{"workload.limit=100", "workload.rate_scale=3", "engine.enable_prefix_caching=true", "engine.mamba_cache_mode=align", "engine.vllm_version=v0.19"}, true},
		{"azure-conv", []string{"workload.limit=250", "workload.rate_scale=6", "engine.enable_prefix_caching=true", "engine.num_gpu_blocks_override=600"}, true},
		{"sessions-chat", []string{"workload.sessions=8", "workload.turns_per_session=3", "model.preset=jamba-reasoning-3b", "engine.enable_prefix_caching=true", "engine.mamba_cache_mode=align"}, true},
	} {
		// The bulk run's observer (SkipSteady) sees the steps that are not
		// replayed in bulk: each record must be the stepped run's of the
		// same step, and every step it does not see a steady one.
		seen := map[int64]string{}
		bulkJSON, bulkText, bulkDigest, n := runBoth(t, c.name, false, c.sets, func(rec *step.Record) {
			seen[rec.Step] = recordKey(rec)
		})
		skipped := int64(0)
		differs, stepped := int64(-1), "" // the first step whose record differs
		stepJSON, stepText, stepDigest, _ := runBoth(t, c.name, true, c.sets, func(rec *step.Record) {
			want, ok := seen[rec.Step]
			if !ok {
				skipped++
				if len(rec.Violations)+len(rec.Wrapped)+len(rec.Finished)+len(rec.Preempted) > 0 || rec.Imposters > 0 {
					t.Errorf("%s %v: step %d was not observed, but something happened in it: %+v", c.name, c.sets, rec.Step, *rec)
				}
				return
			}
			delete(seen, rec.Step)
			if differs < 0 && recordKey(rec) != want {
				differs, stepped = rec.Step, recordText(rec)
			}
		})
		if differs >= 0 {
			// Keys are compact; the bulk run replays (same seed, same
			// bytes) to show the step's record in full.
			var bulk string
			runBoth(t, c.name, false, c.sets, func(rec *step.Record) {
				if rec.Step == differs {
					bulk = recordText(rec)
				}
			})
			t.Errorf("%s %v: step %d's record differs in bulk:\n%s\nstep by step:\n%s", c.name, c.sets, differs, bulk, stepped)
		}
		if len(seen) > 0 || skipped != n {
			t.Errorf("%s %v: %d steps observed in bulk only, %d skipped of %d replayed in bulk", c.name, c.sets, len(seen), skipped, n)
		}
		if !bytes.Equal(bulkDigest, stepDigest) {
			t.Errorf("%s %v: finished requests' times or the blocks' records differ in bulk", c.name, c.sets)
		}
		if !bytes.Equal(bulkJSON, stepJSON) {
			t.Errorf("%s %v: --json differs in bulk:\n%s\nstep by step:\n%s", c.name, c.sets, bulkJSON, stepJSON)
		}
		if !bytes.Equal(bulkText, stepText) {
			t.Errorf("%s %v: the text report differs in bulk:\n%s\nstep by step:\n%s", c.name, c.sets, bulkText, stepText)
		}
		if c.bulk && n == 0 {
			t.Errorf("%s %v: no step replayed in bulk", c.name, c.sets)
		}
		if !c.bulk && n != 0 {
			t.Errorf("%s %v: %d steps replayed in bulk where none may be", c.name, c.sets, n)
		}
	}
}

// runBoth runs a scenario and returns its JSON and text reports, a hash of
// its finished requests' times and its blocks' records, and the steps
// replayed in bulk.
func runBoth(t *testing.T, name string, stepByStep bool, sets []string, observe func(*step.Record)) (js, text, digest []byte, bulk int64) {
	t.Helper()
	sc, err := scenarios.Load(name, sets)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	rep, err := Run(sc, withDigest(Options{stepByStep: stepByStep, bulkSteps: &bulk, Observe: observe, SkipSteady: true}, h))
	if err != nil {
		t.Fatal(err)
	}
	var j, x bytes.Buffer
	if err := rep.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteText(&x); err != nil {
		t.Fatal(err)
	}
	return j.Bytes(), x.Bytes(), h.Sum(nil), bulk
}

// recordKey spells out every field of a record as varints, the slices
// most records leave empty by fmt (fmt's %v on every row, or strconv's
// decimals, were most of TestBulkMatchesStepByStep's time).
func recordKey(r *step.Record) string {
	b := make([]byte, 0, 128+32*len(r.Rows))
	n := func(v int64) { b = binary.AppendVarint(b, v) }
	for _, v := range []int64{r.Step, int64(r.Start), int64(r.End), int64(r.NumScheduledTokens), int64(r.NumDecodes),
		int64(r.Imposters), int64(r.Waiting), int64(r.Running), int64(r.NumBlocks), int64(r.BlocksHeld), int64(r.BlocksFree),
		int64(r.BlocksHeldByRunning), int64(r.SharedBlockRefs), int64(r.StateBlocksHeld), int64(r.HighestSlot),
		r.PrefixQueries, r.PrefixHits, r.PreemptedPrefixQueries, r.PreemptedPrefixHits, int64(r.CachedBlocks), r.EvictedBlocks} {
		n(v)
	}
	n(int64(len(r.Counts)))
	for _, c := range r.Counts {
		n(int64(c))
	}
	n(int64(len(r.Rows)))
	for i := range r.Rows {
		x := &r.Rows[i]
		for _, v := range []int64{x.RequestID, int64(x.Group), int64(x.BatchIndex), int64(x.NumScheduled), int64(x.NumComputed),
			int64(x.NumPrompt), int64(x.NumOutput), int64(x.NumPreemptions), x.ArrivalNS, int64(x.Kind), int64(x.Region), int64(x.Path),
			int64(x.BlocksShort), int64(x.Status), x.CorruptStep, int64(x.Graph), int64(x.NumDrafts)} {
			n(v)
		}
		n(int64(b2i(x.HasInitialState)))
		n(int64(len(x.StateBlocks)))
		for _, s := range x.StateBlocks {
			n(int64(s))
		}
		n(int64(len(x.KernelSlots)))
		for _, s := range x.KernelSlots {
			n(int64(s))
		}
		b = appendAny(b, x.Reads, len(x.Reads))
	}
	b = appendAny(b, r.Preempted, len(r.Preempted))
	b = appendAny(b, r.BlockCopies, len(r.BlockCopies))
	b = appendAny(b, r.Violations, len(r.Violations))
	b = appendAny(b, r.Wrapped, len(r.Wrapped))
	b = appendAny(b, r.Held, len(r.Held))
	b = appendAny(b, r.Finished, len(r.Finished))
	return string(b)
}

// recordText is a record in full, for a failure's message.
func recordText(r *step.Record) string { return fmt.Sprintf("%+v", *r) }

// appendAny appends the length and %v of a slice of n elements; an empty
// one as length 0 without fmt (most rows and records have none).
func appendAny(b []byte, v any, n int) []byte {
	if n == 0 {
		return binary.AppendUvarint(b, 0)
	}
	s := fmt.Sprint(v)
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}
