package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const qwenID = "Qwen/Qwen3-Next-80B-A3B-Instruct"

// The deployment at v0.22: the GDN imposter is listed as a known
// bug and the search finds it (a brand-new 1-token prompt on the decode
// path), with its counterexample written and replayable.
func TestAuditFindsGDNImposterAtV022(t *testing.T) {
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	dir := t.TempDir()
	code, out, errs := runCLI("audit", "--trials", "60", "--out", dir, "--", "vllm", "serve", qwenID, "-tp", "4",
		"--enable-prefix-caching", "--speculative-config", `{"method":"qwen3_next_mtp","num_speculative_tokens":3}`, "--version", "v0.22")
	if code != exitViolations {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitViolations, out, errs)
	}
	for _, want := range []string{
		"the built-in config qwen3-next-80b-a3b",
		"group 3  attention", // the start-up groups
		"GDN stateless first chunk (the GDN imposter) [issue #51562, PR #51565]",
		"no-decode-before-prefill   FAIL",
		"new request (0 computed tokens, 1 scheduled) on the Mamba decode path",
		"verdict: FOUND",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runCLI("run", filepath.Join(dir, "audit-no-decode-before-prefill.yaml"))
	if code != exitViolations {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errs)
	}
}

// At v0.31, eager (no CUDA graphs), without speculative decoding: no
// known bug applies and the search finds nothing.
func TestAuditCleanAtV031(t *testing.T) {
	code, out, errs := runCLI("audit", "--version", "0.31.1", "--trials", "40", "--out", t.TempDir(), "--json", "--",
		"vllm", "serve", "qwen3-next-80b-a3b", "--enforce-eager", "--port", "8000", "--max-num-seqs=64")
	if code != exitClean {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitClean, out, errs)
	}
	var v struct {
		Version   string `json:"vllm_version"`
		Ignored   []struct{ Flag string }
		KnownBugs []struct {
			Applies bool `json:"applies"`
		} `json:"known_bugs"`
		Search struct {
			Properties []struct{ Name, Result string }
		} `json:"search"`
		Startup struct {
			Groups []struct{ Kind string } `json:"kv_cache_groups"`
		} `json:"startup"`
		Exit int `json:"exit"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if v.Version != "v0.31" || v.Exit != 0 || len(v.Startup.Groups) != 4 || len(v.Ignored) != 1 || v.Ignored[0].Flag != "--port" {
		t.Errorf("%+v", v)
	}
	for _, kb := range v.KnownBugs {
		if kb.Applies {
			t.Errorf("a known bug applies:\n%s", out)
		}
	}
	if len(v.Search.Properties) != 7 {
		t.Errorf("searched %+v", v.Search.Properties)
	}
	for _, p := range v.Search.Properties {
		if p.Result != "ok" {
			t.Errorf("%s: %s", p.Name, p.Result)
		}
	}
}

func TestAuditBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"audit"}, "no vLLM command line"},
		{[]string{"audit", "--", "vllm", "serve", qwenID, "--version", "v0.99"}, "--version"},
		{[]string{"audit", "--strict", "--", "vllm", "serve", qwenID, "--port", "8000"}, "--port 8000"},
		{[]string{"audit", "--", "vllm", "serve", qwenID, "--max-num-seqs", "0"}, "--max-num-seqs (engine.max_num_seqs): must be >= 1"},
		{[]string{"audit", "--", "vllm", "serve", qwenID, "--mamba-cache-mode", "sometimes"}, "--mamba-cache-mode"},
		{[]string{"audit", "--", "vllm", "serve", "acme/NoSuchModel-1B"}, "never downloads"},
		{[]string{"audit", "--", "vllm", "serve", "kimi-k3", "--version", "v0.22"}, "does not serve Kimi-K3"},
	} {
		t.Setenv("HF_HUB_CACHE", t.TempDir())
		code, out, errs := runCLI(c.args...)
		if code != exitBadInput || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want 2 with %q\n%s%s", c.args, code, c.want, out, errs)
		}
	}
}

// --trace replays the request log in the derived configuration and the
// model read from the Hugging Face cache is named as such.
func TestAuditTraceAndCachedModel(t *testing.T) {
	cfg, err := os.ReadFile("../../scenarios/models/nemotron-nano-9b-v2.json")
	if err != nil {
		t.Fatal(err)
	}
	hub := t.TempDir()
	t.Setenv("HF_HUB_CACHE", hub)
	snap := filepath.Join(hub, "models--acme--Hybrid-9B", "snapshots", "abc123")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&log, `{"timestamp": %d.5, "input_tokens": %d, "output_tokens": %d}`+"\n", i, 50+i*7, 5+i%4)
	}
	trace := filepath.Join(t.TempDir(), "requests.jsonl")
	if err := os.WriteFile(trace, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI("audit", "--version", "v0.31", "--trials", "20", "--out", t.TempDir(), "--trace", trace,
		"--set", "workload.format=jsonl", "--", "vllm", "serve", "acme/Hybrid-9B", "--enforce-eager", "--max-num-seqs", "8")
	if code != exitClean {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"model: acme/Hybrid-9B: " + filepath.Join(snap, "config.json") + " (Hugging Face cache)",
		"4. replay of " + trace,
		"20 requests",
		"verdict: clean",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
