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
	code, out, errs := runCLI("check", "--trials", "60", "--out", t.TempDir())
	if code != exitClean {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitClean, out, errs)
	}
	if !strings.Contains(out, "no-decode-before-prefill   ok (60 scenarios)") {
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
		{"imposter"},
		{"--no-such-flag"},
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
