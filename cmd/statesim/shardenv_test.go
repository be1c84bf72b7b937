package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A check campaign's shard comes from --shard or, without it, from the
// batch system's environment: shard i searches seed --seed + i and writes
// under --out/seed-S.
func TestCheckShardFromEnv(t *testing.T) {
	for _, env := range []map[string]string{
		{"JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "3"},
		{"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "1"},
		{"--shard": "1/3", "JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "3"}, // the flag wins
	} {
		args := []string{"check", "--version", "v0.13", "--property", "stale-slot-read", "--trials", "100", "--seed", "5"}
		for k, v := range env {
			if k == "--shard" {
				args = append(args, k, v)
			} else {
				t.Setenv(k, v)
			}
		}
		dir := t.TempDir()
		args = append(args, "--out", dir)
		code, out, errs := runCLI(args...)
		if code != exitViolations || !strings.Contains(out, "seed 6,") {
			t.Fatalf("%v: exit %d\n%s%s", env, code, out, errs)
		}
		if _, err := os.Stat(filepath.Join(dir, "seed-6", "stale-slot-read.yaml")); err != nil {
			t.Errorf("%v: %v", env, err)
		}
		for k := range env {
			if k != "--shard" {
				os.Unsetenv(k)
			}
		}
	}
	t.Setenv("JOB_COMPLETION_INDEX", "3")
	t.Setenv("JOB_COMPLETIONS", "3")
	if code, _, errs := runCLI("check", "--trials", "1"); code != exitBadInput || !strings.Contains(errs, "0 <= i < n") {
		t.Errorf("index out of range: exit %d, %s", code, errs)
	}
	if code, _, errs := runCLI("sweep", "imposter", "--vary", "engine.vllm_version=v0.13", "--out", t.TempDir(), "--quiet"); code != exitBadInput || !strings.Contains(errs, "JOB_COMPLETION_INDEX") {
		t.Errorf("sweep, index out of range: exit %d, %s", code, errs)
	}
}
