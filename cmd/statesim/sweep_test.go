package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Small workloads so the CLI tests run in a fraction of a second.
var tinySets = []string{"--set", "workload.num_prompts=128", "--set", "workload.output_len.median=20", "--set", "workload.output_len.max=100"}

func TestSweepCLI(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	args := append([]string{"sweep", "imposter", "--vary", "engine.gpu_memory_utilization=0.2,0.9", "--vary", "engine.vllm_version=v0.13,fixed",
		"--seeds", "2", "--workers", "2", "--out", full}, tinySets...)
	code, out, errOut := runCLI(args...)
	if code != exitClean || !strings.Contains(out, "engine.gpu_memory_utilization") {
		t.Fatalf("sweep: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, f := range []string{"table.txt", "results.csv", "results.json", "imposter-incidence.png", "imposter-incidence.svg", "sweep.json"} {
		if _, err := os.Stat(filepath.Join(full, f)); err != nil {
			t.Error(err)
		}
	}
	// Two shards and a merge give the same CSV and JSON.
	var shards []string
	for _, sh := range []string{"0/2", "1/2"} {
		d := filepath.Join(dir, "shard"+sh[:1])
		shards = append(shards, d)
		if code, out, errOut := runCLI(append(append([]string(nil), args[:len(args)-len(tinySets)-2]...), append([]string{"--out", d, "--shard", sh}, tinySets...)...)...); code != exitClean {
			t.Fatalf("shard %s: exit %d\n%s\n%s", sh, code, out, errOut)
		}
	}
	merged := filepath.Join(dir, "merged")
	if code, out, errOut := runCLI("sweep", "merge", "--out", merged, shards[0], shards[1]); code != exitClean {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, f := range []string{"results.csv", "results.json", "table.txt"} {
		a, _ := os.ReadFile(filepath.Join(full, f))
		b, _ := os.ReadFile(filepath.Join(merged, f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s: merged shards differ from the unsharded sweep", f)
		}
	}
	// One shard alone is incomplete: exit 2 and say how many cells lack.
	if code, _, errOut := runCLI("sweep", "merge", shards[0]); code != exitBadInput || !strings.Contains(errOut, "4 of 8 cells") {
		t.Errorf("merge of one shard: exit %d, %q", code, errOut)
	}
}

func TestSweepCLIBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"sweep"},
		{"sweep", "imposter"},
		{"sweep", "imposter", "--vary", "engine.gpu_memory_utilization"},
		{"sweep", "imposter", "--vary", "engine.gpu_memory_utilization=2"},
		{"sweep", "imposter", "--vary", "engine.nope=1,2"},
		{"sweep", "imposter", "--vary", "engine.gpu_memory_utilization=0.2", "--shard", "2/2"},
		{"sweep", "imposter", "--vary", "engine.gpu_memory_utilization=0.2", "--workers", "0"},
		{"sweep", "imposter", "--vary", "engine.gpu_memory_utilization=0.2", "--metric", "nope"},
		{"sweep", "bug-b-rollouts", "--vary", "engine.gpu_memory_utilization=0.2"},
		{"sweep", "no-such-scenario", "--vary", "seed=1"},
		{"sweep", "merge"},
		{"sweep", "merge", "/nonexistent"},
		{"plot"},
		{"plot", "no-such-scenario"},
		{"plot", "--trace", "/nonexistent.jsonl"},
		{"run", "imposter", "--timeline", "/nonexistent/dir/t.json"},
	} {
		code, _, errOut := runCLI(args...)
		if code != exitBadInput || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 with a message", args, code, errOut)
		}
	}
}

func TestPlotCLI(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.jsonl")
	code, _, errOut := runCLI(append([]string{"run", "imposter", "--trace", tr, "--timeline", filepath.Join(dir, "t.json")}, tinySets...)...)
	if code != exitClean && code != exitViolations {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI(append([]string{"plot", "imposter", "--out", dir}, tinySets...)...)
	if code != exitClean || !strings.Contains(out, filepath.Join(dir, "imposter-budget.png")) {
		t.Fatalf("plot: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI("plot", "--trace", tr, "imposter", "--out", dir)
	if code != exitClean || !strings.Contains(out, filepath.Join(dir, "t-cache.svg")) {
		t.Fatalf("plot --trace: exit %d\n%s\n%s", code, out, errOut)
	}
	// The scenario given must be the one that wrote the trace.
	for _, other := range [][]string{{"wrap32"}, {"imposter", "--set", "seed=9"}} {
		args := append([]string{"plot", "--trace", tr, "--out", dir}, other...)
		if code, _, errOut := runCLI(args...); code != exitBadInput || !strings.Contains(errOut, `written by scenario "imposter" seed 3`) {
			t.Errorf("%v: exit %d, %q", other, code, errOut)
		}
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"step\":1}\nnot json\n"), 0o644)
	if code, _, errOut := runCLI("plot", "--trace", bad); code != exitBadInput || !strings.Contains(errOut, "line 2") {
		t.Errorf("bad trace: exit %d, %q", code, errOut)
	}
}
