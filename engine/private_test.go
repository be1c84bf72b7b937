package engine

import (
	"bytes"
	"crypto/sha256"
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
		preempts, private bool // the run must preempt; must cache private blocks
	}{
		{"azure-conv", []string{"workload.limit=600", "workload.rate_scale=6", "model.preset=attention-only-3b",
			"engine.enable_prefix_caching=true", "engine.num_gpu_blocks_override=700"}, true, true},
		{"azure-conv", []string{"workload.limit=250", "workload.rate_scale=6", "engine.enable_prefix_caching=true",
			"engine.num_gpu_blocks_override=600"}, true, true},
		{"azure-conv", []string{"workload.limit=250", "workload.rate_scale=6", "engine.vllm_version=v0.31",
			"engine.enable_prefix_caching=true", "engine.num_gpu_blocks_override=600"}, true, true},
		{"rollouts-shared-prefix", []string{"workload.prompts=2", "workload.rollouts_per_prompt=8", "workload.steps=2",
			"engine.num_gpu_blocks_override=1500"}, false, true},
		{"mooncake-attention", []string{"workload.limit=300", "engine.num_gpu_blocks_override=4000"}, true, true},
		{"mooncake-hybrid", []string{"workload.limit=40", "engine.enable_prefix_caching=true", "engine.mamba_cache_mode=align",
			"engine.num_gpu_blocks_override=1200"}, false, true},
		// A session's output is its next turn's prompt: nothing private.
		{"sessions-chat", []string{"workload.sessions=16", "workload.turns_per_session=3"}, false, false},
	} {
		ref := runListing(t, c.name, c.sets, true)
		got := runListing(t, c.name, c.sets, false)
		what := c.name + " " + join(c.sets)
		if !bytes.Equal(got.json, ref.json) || !bytes.Equal(got.text, ref.text) {
			t.Errorf("%s: the report differs from listing every block:\n%s\nvs\n%s", what, got.text, ref.text)
		}
		if !bytes.Equal(got.records, ref.records) || !bytes.Equal(got.digest, ref.digest) {
			t.Errorf("%s: records or final cache differ from listing every block", what)
		}
		if ref.unlisted != 0 {
			t.Errorf("%s: listing every block left %d unlisted", what, ref.unlisted)
		}
		if c.private != (got.unlisted > 0) {
			t.Errorf("%s: %d private blocks cached at the end, want some: %v", what, got.unlisted, c.private)
		}
		if c.preempts && got.preemptions == 0 {
			t.Errorf("%s: no preemption: the run no longer tests a request finding its own blocks again", what)
		}
	}
}

type listingRun struct {
	json, text, records, digest []byte
	unlisted                    int
	preemptions                 int64
}

func runListing(t *testing.T, name string, sets []string, listAll bool) listingRun {
	t.Helper()
	sc, err := scenarios.Load(name, sets)
	if err != nil {
		t.Fatal(err)
	}
	var out listingRun
	recs, h := sha256.New(), sha256.New()
	opt := withDigest(Options{listAll: listAll, SkipSteady: true, Observe: func(rec *step.Record) {
		recs.Write([]byte(recordKey(rec)))
	}}, h)
	ended := opt.ended
	opt.ended = func(r *runner) {
		ended(r)
		out.unlisted = r.kv.Pool.UnlistedBlocks()
	}
	rep, err := Run(sc, opt)
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
	out.json, out.text, out.records, out.digest = j.Bytes(), x.Bytes(), recs.Sum(nil), h.Sum(nil)
	out.preemptions = rep.Preemptions
	return out
}

func join(s []string) string {
	var b bytes.Buffer
	for i, v := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(v)
	}
	return b.String()
}
