package engine

import (
	"fmt"
	"strings"
	"testing"

	"statesim/invariant"
	"statesim/scenarios"
	"statesim/setup"
	"statesim/step"
)

// alignMTP is hybridRollouts on tiny-hybrid-mamba2 (tiny-hybrid with Mamba2
// state layers, whose builder is handed num_accepted_tokens; the Mamba1 builder is
// not, so there every rejected draft corrupts the state) in align mode
// under MTP K = 3 with outputs
// long enough to cross block boundaries while decoding (the drafts'
// columns move with the running block), #55898 applied so #55894 stays
// out of the way, and a pool that never preempts.
func alignMTP(t *testing.T, seed int, sets ...string) *scenarios.Scenario {
	return hybridRollouts(t, "align", 64, append([]string{"model.preset=tiny-hybrid-mamba2", fmt.Sprintf("seed=%d", seed),
		"engine.speculative.method=mtp", "engine.speculative.num_speculative_tokens=3", "engine.speculative.acceptance_rate=0.6",
		"workload.output_len.value=120", "engine.patches=[+55898]"}, sets...)...)
}

// Spec decode in align mode, sync and async, with either open fix for
// #53912's EAGLE drop: every state read (the runner's columns from its
// own count, the copy at a boundary from column num_accepted − 1,
// restores of boundaries the post-step copy wrote) checks out, and later
// rollouts hit the cache. Before #46384, the rollouts' hits start a block
// past the attention hit (TestAlignSpecEagleDropCaught).
func TestAlignSpecClean(t *testing.T) {
	for i, async := range []string{"false", "true"} {
		for seed := 1; seed <= 3; seed++ {
			var hits int64
			fix := []string{"+48375", "+57128"}[(i+seed)%2]
			rep, err := Run(alignMTP(t, seed, "engine.async_scheduling="+async, "engine.patches=[+55898, "+fix+"]"), Options{Observe: func(r *step.Record) { hits += r.PrefixHits }})
			if err != nil {
				t.Fatal(err)
			}
			if rep.TotalViolations() != 0 || rep.Finished != rep.Requests || hits == 0 {
				t.Errorf("async %s seed %d: %d/%d finished, %d hit tokens, violations %+v", async, seed, rep.Finished, rep.Requests, hits, rep.Violations)
			}
		}
	}
}

// #53912 before #46384 (v0.31 with -46384, as the releases before the
// v0.28 row): the rollouts share a 128-token prompt boundary; the
// attention hit drops its last block, the Mamba hit keeps the boundary
// its one-block margin reached, and each rollout reads a fresh attention
// block at position 3. With #46384 (v0.31 as released) the Mamba group
// gets no margin, its hit stays within the attention hit's, and the same
// rollouts run clean.
func TestAlignSpecEagleDropCaught(t *testing.T) {
	staleReadCaught(t, alignMTP(t, 1, "engine.patches=[+55898, -46384]"), Options{}, "under the EAGLE drop",
		"after the EAGLE drop", "Mamba group 0 restores the state after 128 tokens")
	rep, err := Run(alignMTP(t, 1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.Count(invariant.StaleSlotRead); n != 0 || rep.Finished != rep.Requests {
		t.Errorf("with #46384: %d stale reads, %d/%d finished: %+v", n, rep.Finished, rep.Requests, rep.Violations)
	}
}

// staleReadCaught runs sc and requires a stale-slot-read whose first
// violation's detail names every one of wants.
func staleReadCaught(t *testing.T, sc *scenarios.Scenario, o Options, what string, wants ...string) {
	t.Helper()
	rep, err := Run(sc, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count(invariant.StaleSlotRead) == 0 {
		t.Fatalf("no stale-slot-read %s: %+v", what, rep.Violations)
	}
	v := rep.Violations[0]
	for _, w := range wants {
		if !strings.Contains(v.Detail, w) {
			t.Errorf("violation %s %s: want %q in its detail", v.String(), what, w)
		}
	}
}

// The align-spec path's restore check can fail: without chunk alignment
// a boundary's hash is cached over a state of fewer tokens, and a
// rollout restoring it under MTP is caught.
func TestAlignSpecRestoreMismatchCaught(t *testing.T) {
	staleReadCaught(t, alignMTP(t, 1, "engine.max_num_batched_tokens=40"), Options{noChunkAlign: true},
		"without chunk alignment under MTP", "align, K = 3", "the cache says block")
}

// #33352 turns async scheduling off with Mamba prefix caching; #33997
// turns it back on for align. A release with both keeps it in align and
// drops it in all; removing #33997 drops it in align too; removing both
// keeps it.
func TestAsyncSchedulingMambaPrefixCaching(t *testing.T) {
	for _, c := range []struct {
		mode, patches string
		want          bool
	}{
		{"align", "[]", true},
		{"all", "[]", false},
		{"align", "[-33997]", false},
		{"align", "[-33997, -33352]", true},
		{"all", "[-33997, -33352]", true},
	} {
		sc := hybridRollouts(t, c.mode, 64, "engine.async_scheduling=true", "engine.patches="+c.patches)
		st, err := setup.Resolve(sc)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Sched.Config.AsyncScheduling; got != c.want {
			t.Errorf("%s %s: async %v, want %v", c.mode, c.patches, got, c.want)
		}
		// vLLM warns when it turns async scheduling off; so does the report.
		if w := st.AsyncOff; (w == "") != c.want || w != "" && !strings.Contains(w, "will be disabled") {
			t.Errorf("%s %s: warning %q with async %v", c.mode, c.patches, w, c.want)
		}
	}
	// The warning reaches the report, text and JSON.
	sc := hybridRollouts(t, "all", 64, "engine.async_scheduling=true")
	rep, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text, js strings.Builder
	rep.WriteText(&text)
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "warning: Async scheduling is not compatible") || !strings.Contains(js.String(), `"warnings": [`) {
		t.Errorf("report without the async warning:\n%s", text.String())
	}
	if _, err := setup.Parse([]byte("name: x\nmodel: {preset: tiny-hybrid}\nengine: {vllm_version: v0.31, patches: [-33352]}\nworkload: {kind: poisson, rate: 1, count: 1}\n"), "x.yaml", nil); err == nil || !strings.Contains(err.Error(), "33997") || !strings.Contains(err.Error(), "33352") {
		t.Errorf("removing #33352 under #33997: %v, want an error naming both", err)
	}
}
