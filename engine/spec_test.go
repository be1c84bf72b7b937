package engine

import (
	"fmt"
	"strings"
	"testing"

	"statesim/invariant"
	"statesim/report"
	"statesim/scenarios"
)

// specScenario is Nemotron-H (Mamba2) under MTP with K = 3: chunked long
// prompts next to short requests' first decodes, on the V1 runner, whose
// threshold reorder #55894 is about.
const specScenario = `name: mtp
seed: 3
model:
  hf_config: nemotron-nano-9b-v2
engine:
  model_runner: v1
  vllm_version: VERSION
  max_num_batched_tokens: 256
  max_num_seqs: 16
  num_gpu_blocks_override: 2000
  speculative: {method: METHOD, num_speculative_tokens: 3, acceptance_rate: 0.7}
workload:
  kind: batches
  num_prompts: 24
  batch_size: 12
  prompt_len: {dist: lognormal, median: 60, sigma: 1.2, min: 1, max: 1500}
  output_len: {dist: lognormal, median: 30, sigma: 0.8, min: 1, max: 200}
`

func runSpec(t *testing.T, version, method string) (stale int64, outputs int64) {
	t.Helper()
	return runSpecOn(t, "v1", version, method)
}

// runSpecOn is runSpec on model runner runner.
func runSpecOn(t *testing.T, runner, version, method string) (stale int64, outputs int64) {
	t.Helper()
	y := strings.NewReplacer("VERSION", version, "METHOD", method, "model_runner: v1", "model_runner: "+runner).Replace(specScenario)
	sc, err := scenarios.Parse([]byte(y), "mtp.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Finished != rep.Requests {
		t.Fatalf("%s %s: %d of %d finished", version, method, rep.Finished, rep.Requests)
	}
	return rep.Count(invariant.StaleSlotRead), rep.OutputTokens
}

// #55894: under MTP the drafter's group pulls the runner's threshold to 1
// and draft decodes behind a chunk read column 0 through the prefill
// kernel; #55898 closes it, and ngram (no drafter group) never opens it.
// Every run generates the same tokens: the acceptance draws do not depend
// on the classification.
func TestSpecDecodeMinThresholdBug(t *testing.T) {
	bug, out := runSpec(t, "v0.31", "mtp")
	if bug == 0 {
		t.Fatal("v0.31 MTP: no stale-slot-read; #55894 should show")
	}
	fixed, out2 := runSpec(t, "v0.31\n  patches: [+55898]", "mtp")
	if fixed != 0 {
		t.Fatalf("v0.31 +55898: %d stale-slot-reads", fixed)
	}
	ngram, _ := runSpec(t, "v0.31", "ngram")
	if ngram != 0 {
		t.Fatalf("v0.31 ngram: %d stale-slot-reads", ngram)
	}
	// Model Runner V2 runs no threshold reorder: its sort puts the draft
	// decodes (1 + K tokens) before the long chunks.
	if v2, _ := runSpecOn(t, "v2", "v0.31", "mtp"); v2 != 0 {
		t.Fatalf("v0.31 MTP on V2: %d stale-slot-reads", v2)
	}
	if out != out2 {
		t.Fatalf("output tokens %d with the bug, %d without", out, out2)
	}
}

// Under async scheduling the same MTP workload still shows #55894 and is
// clean with #55898: the step scheduled while another is in flight runs
// from the runner's exact count and accepted column, though the
// scheduler's count still holds the rejected drafts.
func TestSpecDecodeAsync(t *testing.T) {
	bug, _ := runSpec(t, "v0.31\n  async_scheduling: true", "mtp")
	if bug == 0 {
		t.Fatal("v0.31 MTP async: no stale-slot-read; #55894 should show")
	}
	if fixed, _ := runSpec(t, "v0.31\n  async_scheduling: true\n  patches: [+55898]", "mtp"); fixed != 0 {
		t.Fatalf("v0.31 +55898 async: %d stale-slot-reads", fixed)
	}
}

// The column lease (statecache.SpecDecode) against the plain checks, which
// read and write every column of every group every step: the same
// reports and --trace bytes, with #55894's stale reads firing (v0.31 MTP),
// clean (+55898), EAGLE, ngram, fixed acceptance and a pool small enough
// to preempt.
func TestSpecColumnLeaseMatchesPlain(t *testing.T) {
	cases := []struct {
		name, version, method string
		sets                  []string
		stale                 bool
	}{
		{"mtp-55894", "v0.31", "mtp", nil, true},
		{"mtp-55898", "v0.31\n  patches: [+55898]", "mtp", nil, false},
		{"eagle", "v0.31\n  patches: [+55898]", "eagle", []string{"engine.speculative.acceptance_rate=0.3"}, false},
		{"ngram-fixed", "v0.31", "ngram", []string{"engine.speculative.accepted=2"}, false},
		{"preempt", "v0.31\n  patches: [+55898]", "mtp", []string{"engine.num_gpu_blocks_override=60"}, false},
		{"async-55894", "v0.31\n  async_scheduling: true", "mtp", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			y := strings.NewReplacer("VERSION", c.version, "METHOD", c.method).Replace(specScenario)
			run := func(plain bool) (string, string, *report.Report) {
				sc, err := scenarios.Parse([]byte(y), "mtp.yaml", c.sets)
				if err != nil {
					t.Fatal(err)
				}
				h := traceHash()
				rep, err := Run(sc, Options{Trace: h, plainChecks: plain})
				if err != nil {
					t.Fatal(err)
				}
				return reportJSON(t, rep), fmt.Sprintf("%x", h.Sum(nil)), rep
			}
			fast, fastTrace, rep := run(false)
			plain, plainTrace, _ := run(true)
			if got := rep.Count(invariant.StaleSlotRead) > 0; got != c.stale {
				t.Fatalf("stale-slot-reads %d, want some: %v", rep.Count(invariant.StaleSlotRead), c.stale)
			}
			if fast != plain || fastTrace != plainTrace {
				t.Errorf("the column lease and the plain checks disagree")
			}
		})
	}
}
