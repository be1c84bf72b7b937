package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCompleteCandidates(t *testing.T) {
	for _, c := range []struct {
		words []string
		has   []string
		not   []string
	}{
		{[]string{""}, []string{"audit", "check", "run", "schema", "completion", "scenarios"}, []string{completeCmd}},
		{[]string{"ch"}, []string{"check"}, []string{"run"}},
		{[]string{"run", "imp"}, []string{"imposter", "imposter-fixed"}, []string{"wrap32"}},
		{[]string{"run", "--"}, []string{"--json", "--set", "--strict", "--trace"}, nil},
		{[]string{"check", "--version", ""}, []string{"v0.13", "v0.31", "fixed", "all"}, nil},
		{[]string{"check", "--model", "qwen"}, []string{"qwen3-next-80b-a3b"}, []string{"tiny-hybrid"}},
		{[]string{"check", "--patches", "+53"}, []string{"+53059"}, []string{"-53059"}},
		{[]string{"check", "--spec", ""}, []string{"mtp", "eagle", "ngram", "off"}, nil},
		{[]string{"check", "--property", "stale"}, []string{"stale-slot-read"}, nil},
		{[]string{"check", "--pr"}, []string{"--prefix-caching", "--property"}, nil},
		{[]string{"sweep", "bug-"}, []string{"bug-a-memory", "bug-b-rollouts"}, nil},
		{[]string{"check", "m"}, []string{"merge"}, nil},
		{[]string{"model", "nemo"}, []string{"nemotron-nano-9b-v2"}, nil},
		{[]string{"audit", "--"}, []string{"--version", "--strict", "--json", "--trials"}, nil},
		{[]string{"audit", "--", ""}, []string{"vllm"}, nil},
		{[]string{"audit", "--", "vllm", "serve", "Qwen/"}, []string{"Qwen/Qwen3-Next-80B-A3B-Instruct"}, nil},
		{[]string{"audit", "--", "vllm", "serve", "x", "--mamba"}, []string{"--mamba-cache-mode", "--mamba-block-size"}, nil},
		{[]string{"audit", "--", "vllm", "serve", "x", "--mamba-cache-mode", ""}, []string{"align", "all", "none"}, nil},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}, nil},
	} {
		got := complete(c.words)
		for _, h := range c.has {
			if !slices.Contains(got, h) {
				t.Errorf("%q: lacks %q in %v", c.words, h, got)
			}
		}
		for _, n := range c.not {
			if slices.Contains(got, n) {
				t.Errorf("%q: offers %q", c.words, n)
			}
		}
	}
	// The hidden helper prints them, one a line.
	code, out, _ := runCLI(completeCmd, "check", "--async", "o")
	if code != exitClean || out != "off\non\n" {
		t.Errorf("exit %d, %q", code, out)
	}
}

// TestCompletionScripts: each script is what its shell parses, and calls
// the helper.
func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, out, errs := runCLI("completion", sh)
		if code != exitClean || !strings.Contains(out, "statesim "+completeCmd) {
			t.Fatalf("%s: exit %d\n%s%s", sh, code, out, errs)
		}
		bin, err := exec.LookPath(sh)
		if err != nil {
			t.Logf("%s not installed: syntax not checked", sh)
			continue
		}
		p := filepath.Join(t.TempDir(), "c."+sh)
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		flag := "-n"
		if sh == "fish" {
			flag = "--no-execute"
		}
		if b, err := exec.Command(bin, flag, p).CombinedOutput(); err != nil {
			t.Errorf("%s %s: %v\n%s", sh, flag, err, b)
		}
	}
	if code, _, _ := runCLI("completion", "tcsh"); code != exitBadInput {
		t.Errorf("tcsh: exit %d, want 2", code)
	}
}
