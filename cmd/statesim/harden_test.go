package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"statesim/internal/testtier"
	"strings"
	"testing"
)

// --help is not an error for any command, and says what the exit
// statuses mean.
func TestHelpExitsZero(t *testing.T) {
	names := []string{}
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, h := range []string{"--help", "-h"} {
			code, out, errs := runCLI(n, h)
			if code != exitClean {
				t.Errorf("%s %s: exit %d", n, h, code)
			}
			if n != "scenarios" && !strings.Contains(out+errs, "3    internal error") {
				t.Errorf("%s %s does not document the exit statuses:\n%s%s", n, h, out, errs)
			}
		}
	}
	if code, _, _ := runCLI("sweep", "merge", "--help"); code != exitClean {
		t.Errorf("sweep merge --help: exit %d", code)
	}
	if code, out, _ := runCLI("--help"); code != exitClean || !strings.Contains(out, "130  sweep interrupted") || !strings.Contains(out, "A bare\nname is the built-in") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
	// After "--" it is an argument, not a request for help.
	if code, _, _ := runCLI("run", "--", "--help"); code != exitBadInput {
		t.Errorf("run -- --help: exit %d", code)
	}
}

func TestRateScaleFlag(t *testing.T) {
	for _, v := range []string{"0", "-1", "inf", "NaN", "fast"} {
		code, _, errs := runCLI("run", "azure-conv", "--rate-scale", v)
		if code != exitBadInput || !strings.Contains(errs, "want a finite number > 0") {
			t.Errorf("--rate-scale %s: exit %d, %q", v, code, errs)
		}
	}
}

// A configuration whose pool would not fit in memory is refused before
// anything is allocated (it used to die of a 41 GB allocation).
func TestMemoryRefusedBeforeAllocating(t *testing.T) {
	code, _, errs := runCLI("run", "imposter-mock", "--set", "engine.num_gpu_blocks_override=10000000")
	if code != exitBadInput || !strings.Contains(errs, "field checks.max_memory_gib: the run needs about") {
		t.Errorf("exit %d, %q", code, errs)
	}
	code, _, errs = runCLI("run", "imposter", "--set", "engine.max_model_len=5000000")
	if code != exitBadInput || !strings.Contains(errs, "field engine.max_model_len: to serve at least one request with max_model_len 5000000") {
		t.Errorf("max_model_len: exit %d, %q", code, errs)
	}
}

// A step that would end past the int64 ns clock is bad input (exit 2),
// not an internal error.
func TestClockOverflowIsBadInput(t *testing.T) {
	code, _, errs := runCLI("run", "imposter", "--set", "timing.state_bandwidth_gbs=1e-300")
	if code != exitBadInput || !strings.Contains(errs, "timing: step 0 would end past the simulated clock's range") {
		t.Errorf("exit %d, %q", code, errs)
	}
}

func TestCalibrateRefusesNaN(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"nan.csv":     "step_us,prefill_tokens,decode_rows,context_tokens,state_bytes\n1500,NaN,1,1,1\n",
		"nanstep.csv": "step_us,prefill_tokens,decode_rows,context_tokens,state_bytes\nnan,1,1,1,1\n",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		code, out, errs := runCLI("calibrate", p)
		if code != exitBadInput || !strings.Contains(errs, name+":2: field ") || strings.Contains(out, "NaN") {
			t.Errorf("%s: exit %d, %q %q", name, code, out, errs)
		}
	}
}

func TestCheckUnwritableOut(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocker, nil, 0o644)
	code, out, errs := runCLI("check", "--version", "v0.13", "--property", "stale-slot-read", "--trials", "300", "--out", filepath.Join(blocker, "sub"))
	if code != exitBadInput || !strings.Contains(errs, "could not write the counterexample") || strings.Contains(out, "could not write") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

// writeTraceScenario writes a trace and a scenario replaying it.
func writeTraceScenario(t *testing.T, trace, extra string) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t.csv"), []byte(trace), 0o644)
	y := "name: t\nmodel: {preset: tiny-hybrid}\nengine:\n  max_model_len: 64\n  num_gpu_blocks_override: 200\n" +
		"workload:\n  kind: trace\n  path: t.csv\n  prompt_len: {dist: trace}\n  output_len: {dist: trace}\n" + extra
	p := filepath.Join(dir, "t.yaml")
	os.WriteFile(p, []byte(y), 0o644)
	return p
}

const badTrace = "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
	"2024-05-12 00:00:00+00:00,10,5\n" +
	"2024-05-12 00:00:01+00:00,0,5\n" + // empty prompt
	"2024-05-12 00:00:02+00:00,64,5\n" + // prompt = max_model_len
	"2024-05-12 00:00:01.5+00:00,8,5\n" + // out of order
	"2024-05-12 00:00:03+00:00,20,5\n" +
	"2024-05-12 00:00:04+00:00,100,5\n" // prompt > max_model_len

// One bad record rejects one request, as vLLM does; the report counts
// them by reason; --strict fails on the first instead.
func TestTraceAdmission(t *testing.T) {
	p := writeTraceScenario(t, badTrace, "")
	code, out, errs := runCLI("run", p, "--json")
	if code != exitClean {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Requests, Finished int64
		Rejected           []struct {
			Reason    string
			Count     int64
			FirstLine int `json:"first_line"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, r := range rep.Rejected {
		got = append(got, r.Reason+":"+string(rune('0'+r.Count))+"@"+string(rune('0'+r.FirstLine)))
	}
	if rep.Requests != 2 || rep.Finished != 2 || strings.Join(got, " ") != "empty_prompt:1@3 prompt_too_long:2@4 out_of_order:1@5" {
		t.Errorf("requests %d, finished %d, rejected %v", rep.Requests, rep.Finished, got)
	}
	_, text, _ := runCLI("run", p)
	if !strings.Contains(text, "rejected at admission: 4 requests") || !strings.Contains(text, "t.csv:3: field ContextTokens: 0 tokens") {
		t.Errorf("text report:\n%s", text)
	}
	code, _, errs = runCLI("run", p, "--strict")
	csv := filepath.Join(filepath.Dir(p), "t.csv")
	if code != exitBadInput || errs != "statesim: "+csv+":3: field ContextTokens: 0 tokens; a prompt needs at least 1\n" {
		t.Errorf("--strict: exit %d, %q", code, errs)
	}
	clean := writeTraceScenario(t, "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-12 00:00:00+00:00,70,5\n2024-05-12 00:00:01+00:00,9,5\n", "  strict: true\n")
	if code, _, errs := runCLI("run", clean); code != exitBadInput || !strings.Contains(errs, "prompt of 70 tokens leaves no room to generate within max_model_len 64 (workload.strict)") {
		t.Errorf("strict prompt_too_long: exit %d, %q", code, errs)
	}
}

func TestImpostersTotalInJSON(t *testing.T) {
	_, out, _ := runCLI("run", "imposter", "--json")
	var rep struct {
		Imposters      []json.RawMessage `json:"imposters"`
		ImpostersTotal *int64            `json:"imposters_total"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.ImpostersTotal == nil || *rep.ImpostersTotal < int64(len(rep.Imposters)) || len(rep.Imposters) == 0 {
		t.Errorf("imposters %d, total %v", len(rep.Imposters), rep.ImpostersTotal)
	}
}

func TestSweepMisleadingErrors(t *testing.T) {
	code, _, errs := runCLI("sweep", "bug-a-memroy")
	if code != exitBadInput || !strings.Contains(errs, `unknown sweep "bug-a-memroy"`) || !strings.Contains(errs, "did you mean bug-a-memory?") {
		t.Errorf("typo: exit %d, %q", code, errs)
	}
	code, _, errs = runCLI("sweep", "imposter")
	if code != exitBadInput || !strings.Contains(errs, "imposter is a scenario, not a sweep: give at least one --vary") {
		t.Errorf("no --vary: exit %d, %q", code, errs)
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"types.yaml": "name: s\nscenario: imposter\nvary: 3\n",
		"set.yaml":   "name: s\nscenario: imposter\nset:\n  - workload.num_prompts=64\n  - engine.max_num_seqs=0\nvary:\n  - key: engine.gpu_memory_utilization\n    values: [0.2, 0.5]\n",
		"value.yaml": "name: s\nscenario: imposter\nset: [workload.num_prompts=64]\nvary:\n  - key: engine.gpu_memory_utilization\n    values:\n      - 0.2\n      - 7\n",
		"unk.yaml":   "name: s\nscenario: imposter\nvary:\n  - key: engine.gpu_memory_utilization\n    value: [0.2]\n",
	} {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	for name, want := range map[string]string{
		"types.yaml": `types.yaml:3: field vary: want a list, got "3"`,
		"set.yaml":   "set.yaml:5: field engine.max_num_seqs: must be >= 1, got 0 (applied as --set engine.max_num_seqs=0 to scenario imposter)",
		"value.yaml": "value.yaml:8: field engine.gpu_memory_utilization: must be in (0, 1], got 7",
		"unk.yaml":   "unk.yaml:5: field vary[0].value: unknown field (known: key, values)",
	} {
		code, _, errs := runCLI("sweep", filepath.Join(dir, name), "--out", filepath.Join(dir, "out-"+name))
		if code != exitBadInput || !strings.Contains(errs, want) || strings.Contains(errs, "sweep.Axis") || strings.Contains(errs, "!!") {
			t.Errorf("%s: exit %d\n got  %q\n want %s", name, code, errs, want)
		}
	}
}

func TestSweepCorruptFilesNamed(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	args := []string{"imposter", "--vary", "engine.vllm_version=v0.13,fixed", "--set", "workload.num_prompts=64", "--quiet"}
	if code, _, errs := runCLI(append([]string{"sweep", "--out", a, "--shard", "0/2"}, args...)...); code != exitClean {
		t.Fatalf("shard 0: %s", errs)
	}
	if code, _, errs := runCLI(append([]string{"sweep", "--out", b, "--shard", "1/2"}, args...)...); code != exitClean {
		t.Fatalf("shard 1: %s", errs)
	}
	cell := filepath.Join(b, "cells", "000001.json")
	os.WriteFile(cell, []byte("{\"index\": 1, \"key\""), 0o644)
	code, _, errs := runCLI("sweep", "merge", a, b)
	if code != exitBadInput || !strings.Contains(errs, cell+": corrupt cell") || strings.Contains(errs, "shard missing") {
		t.Errorf("corrupt cell: exit %d, %q", code, errs)
	}
	manifest := filepath.Join(a, "sweep.json")
	os.WriteFile(manifest, []byte("{\"sweep\": "), 0o644)
	code, _, errs = runCLI("sweep", "merge", a, b)
	if code != exitBadInput || !strings.Contains(errs, manifest+" is corrupt") || strings.Contains(errs, "different sweep") {
		t.Errorf("corrupt manifest, merge: exit %d, %q", code, errs)
	}
	code, _, errs = runCLI(append([]string{"sweep", "--out", a}, args...)...)
	if code == exitClean || !strings.Contains(errs, manifest+" is corrupt") || strings.Contains(errs, "different sweep") {
		t.Errorf("corrupt manifest, resume: exit %d, %q", code, errs)
	}
}

// An installed binary (go install: no repository beside it) replays the
// built-ins that name repository files, from any directory.
func TestInstalledBinaryFindsBuiltinTraces(t *testing.T) {
	src, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// The suite runs the command in process from an empty directory: the
	// trace must come from the binary, not the working tree. The long tier
	// also builds the binary and runs it there, as installed.
	t.Chdir(t.TempDir())
	code, out, errs := runCLI("run", "azure-conv", "--set", "workload.limit=200")
	if code != exitClean && code != exitViolations || !strings.Contains(out, "run: 200 requests") {
		t.Fatalf("in process from an empty directory: exit %d (%s):\n%s", code, errs, out)
	}
	if !testtier.Long() {
		return
	}
	bin := filepath.Join(t.TempDir(), "statesim")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "run", "azure-conv", "--set", "workload.limit=200")
	cmd.Dir = t.TempDir()
	b, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != exitClean && code != exitViolations {
		t.Fatalf("exit %d (%v):\n%s", code, err, b)
	}
	if !strings.Contains(string(b), "run: 200 requests") {
		t.Errorf("output:\n%s", b)
	}
}
