package engine

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"statesim/scenarios"
	"statesim/step"
)

// TestPrivateTailsMatchListingAll holds the private-tail shortcut
// (statecache.BlockTable.SetPrivateFrom: a request's own blocks cached
// out of the pool's table until it is preempted) to vLLM's table, where
// every cached block is listed: the reports, every stepped record, every
// finished request and the final cache (records, free queue, counters)
// must be the same. The runs reach what could tell them apart: evictions
// of private blocks, preemptions whose requests hit their own blocks
// again, shared prefixes next to private tails, all three Mamba modes.
func TestPrivateTailsMatchListingAll(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name              string
		sets              []string
		preempts, private bool // the run must list private blocks at preemptions; must cache some
	}{
		{"azure-conv", []string{"workload.limit=600", "workload.rate_scale=6", "model.preset=attention-only-3b",
			"engine.enable_prefix_caching=true", "engine.num_gpu_blocks_override=700"}, true, true},
		// All mode at the hybrid's unified block (mamba_block_size 176).
		{"azure-conv", []string{"workload.limit=250", "workload.rate_scale=6", "engine.enable_prefix_caching=true",
			"engine.mamba_block_size=176", "engine.num_gpu_blocks_override=600"}, true, true},
		// All mode at Mamba1's chunk, 2048 tokens (vLLM's default), on
		// prompts long enough to fill blocks of it; preempted in their
		// prefills (15 times), as above.
		{"mooncake-hybrid", []string{"workload.limit=100", "engine.enable_prefix_caching=true",
			"engine.num_gpu_blocks_override=150"}, false, true},
		{"azure-conv", []string{"workload.limit=250", "workload.rate_scale=6", "engine.vllm_version=v0.31",
			"engine.enable_prefix_caching=true", "engine.num_gpu_blocks_override=600"}, true, true},
		{"rollouts-shared-prefix", []string{"workload.prompts=2", "workload.rollouts_per_prompt=8", "workload.steps=2",
			"engine.num_gpu_blocks_override=1500"}, false, true},
		// Preempted in their prefills (54 times): nothing private yet.
		{"mooncake-attention", []string{"workload.limit=300", "engine.num_gpu_blocks_override=4000"}, false, true},
		{"mooncake-hybrid", []string{"workload.limit=40", "engine.enable_prefix_caching=true", "engine.mamba_cache_mode=align",
			"engine.num_gpu_blocks_override=1200"}, false, true},
		// A session's output is its next turn's prompt: nothing private.
		{"sessions-chat", []string{"workload.sessions=16", "workload.turns_per_session=3"}, false, false},
	} {
		ref := runListing(t, c.name, c.sets, true)
		got := runListing(t, c.name, c.sets, false)
		what := c.name + " " + strings.Join(c.sets, " ")
		if !bytes.Equal(got.Outcome, ref.Outcome) {
			t.Errorf("%s: reports, records or final cache differ from listing every block", what)
		}
		if c.private != (got.Private > 0) {
			t.Errorf("%s: %d private blocks cached, want some: %v", what, got.Private, c.private)
		}
		if ref.Private != 0 {
			t.Errorf("%s: listing every block cached %d private", what, ref.Private)
		}
		if c.preempts && got.Published == 0 {
			t.Errorf("%s: %d preemptions listed no private block: the run no longer tests a request finding its own blocks again", what, got.Preemptions)
		}
	}
}

func runListing(t *testing.T, name string, sets []string, listAll bool) Listing {
	t.Helper()
	sc, err := scenarios.Load(name, sets)
	if err != nil {
		t.Fatal(err)
	}
	out, err := RunListing(sc, listAll)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// recordsInto writes every record it observes into w (recordKey).
func recordsInto(w io.Writer) func(*step.Record) {
	return func(rec *step.Record) { io.WriteString(w, recordKey(rec)) }
}
