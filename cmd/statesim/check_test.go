package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckFindsAndReplaysBugA: check exits 1 under v0.13, prints the
// replay command, and that command replays the violation.
func TestCheckFindsAndReplaysBugA(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI("check", "--version", "v0.13", "--property", "stale-slot-read", "--trials", "300", "--out", dir)
	if code != exitViolations {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitViolations, out, errs)
	}
	yaml := filepath.Join(dir, "stale-slot-read.yaml")
	for _, want := range []string{"stale-slot-read", "FAIL", "seed 1", "shrunk: ", "replay: statesim run " + yaml} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runCLI("run", yaml)
	if code != exitViolations || !strings.Contains(out, "IMPOSTER") {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errs)
	}
}

func TestCheckCleanWhenFixed(t *testing.T) {
	code, out, errs := runCLI("check", "--trials", "20", "--out", t.TempDir())
	if code != exitClean {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitClean, out, errs)
	}
	if !strings.Contains(out, "no-decode-before-prefill   ok (20 scenarios)") {
		t.Errorf("output:\n%s", out)
	}
}

func TestCheckBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--trials", "0"},
		{"--version", "v9"},
		{"--bits", "8"},
		{"--bits", "20-16"},
		{"--property", "no-such-property"},
		{"--set", "engine.max_num_seqs=-3"},
		{"--set", "engine.no_such_knob=1"},
		{"--set", "engine.vllm_version=v9"},       // a rule package setup applies
		{"--set", "engine.mamba_cache_mode=some"}, // the same
		{"imposter"},
		{"--no-such-flag"},
		{"--model-runner", "v3"},
		{"--version", "v0", "--model-runner", "v1"},
	} {
		code, out, errs := runCLI(append([]string{"check", "--trials", "5"}, args...)...)
		if code != exitBadInput {
			t.Errorf("%v: exit %d, want %d\n%s%s", args, code, exitBadInput, out, errs)
		}
		if errs == "" {
			t.Errorf("%v: no message on stderr", args)
		}
	}
}

func TestCheckBackendFlag(t *testing.T) {
	if code, _, errs := runCLI("check", "--backend", "cuda", "--trials", "1"); code != exitBadInput || !strings.Contains(errs, "make cuda") {
		t.Errorf("--backend cuda without CUDA: exit %d, %s", code, errs)
	}
	if code, _, errs := runCLI("check", "--backend", "gpu"); code != exitBadInput || !strings.Contains(errs, "unknown") {
		t.Errorf("--backend gpu: exit %d, %s", code, errs)
	}
	code, out, errs := runCLI("check", "--backend", "mock", "--trials", "20", "--property", "logprobs-match-reference", "--out", t.TempDir())
	if code != exitClean || !strings.Contains(out, "ok (20 scenarios)") {
		t.Errorf("--backend mock, fixed: exit %d\n%s%s", code, out, errs)
	}
}

// TestCheckModelFlag: --model draws the named configs; the GDN builder's
// imposter is found on Qwen3-Next at a release where it was live and
// replays, nothing is found at v0.31, and an unknown model is bad input.
func TestCheckModelFlag(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI("check", "--version", "v0.22", "--model", "qwen3-next-80b-a3b", "--property", "stale-slot-read", "--trials", "100", "--out", dir)
	if code != exitViolations || !strings.Contains(out, "models qwen3-next-80b-a3b") || !strings.Contains(out, "qwen3-next-80b-a3b, vLLM v0.22") {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitViolations, out, errs)
	}
	if code, out, errs = runCLI("run", filepath.Join(dir, "stale-slot-read.yaml")); code != exitViolations || !strings.Contains(out, "IMPOSTER") {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs = runCLI("check", "--version", "v0.31", "--model", "qwen3-next-80b-a3b,kimi-linear-48b-a3b", "--property", "stale-slot-read", "--trials", "100", "--out", t.TempDir()); code != exitClean {
		t.Fatalf("v0.31: exit %d, want %d\n%s%s", code, exitClean, out, errs)
	}
	if code, _, errs = runCLI("check", "--model", "qwen4", "--out", t.TempDir()); code != exitBadInput || !strings.Contains(errs, `--model: model "qwen4"`) {
		t.Fatalf("unknown model: exit %d, want %d\n%s", code, exitBadInput, errs)
	}
	// Kimi-K3 before the release that serves it is bad input, not a
	// counterexample.
	if code, _, errs = runCLI("check", "--version", "v0.26", "--model", "kimi-k3", "--out", t.TempDir()); code != exitBadInput || !strings.Contains(errs, "--model kimi-k3: vLLM v0.26 does not serve Kimi-K3") {
		t.Fatalf("kimi-k3 at v0.26: exit %d, want %d\n%s", code, exitBadInput, errs)
	}
}

// TestCheckModelRunner: at v0.31 + #53059 without V2's own gate (#51865)
// the search finds the stale CUDA-graph replay under the default runner
// (V2) and says why, and finds nothing on V1, where the patch's edit is on
// the dispatch path.
func TestCheckModelRunner(t *testing.T) {
	base := []string{"check", "--version", "v0.31", "--model", "qwen3-next-80b-a3b", "--patches", "+53059,-51865",
		"--set", "engine.cudagraph_mode=full_and_piecewise", "--property", "stale-slot-read", "--trials", "40"}
	code, out, errs := runCLI(append(base, "--out", t.TempDir())...)
	if code != exitViolations || !strings.Contains(out, "note: +53059 changes nothing under model runner v2") {
		t.Fatalf("default runner: exit %d, want %d and the note\n%s%s", code, exitViolations, out, errs)
	}
	code, out, errs = runCLI(append(base, "--model-runner", "v1", "--out", t.TempDir())...)
	if code != exitClean || strings.Contains(out, "note:") || !strings.Contains(out, "model runner v1") {
		t.Fatalf("--model-runner v1: exit %d, want %d without the note\n%s%s", code, exitClean, out, errs)
	}
}
