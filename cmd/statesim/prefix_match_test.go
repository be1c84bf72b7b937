package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// statesim model prints hash_block_size and whether fine-grained hits are
// on; --json carries both, and why a prefix_match_unit set is not used.
func TestModelPrefixMatchUnit(t *testing.T) {
	for _, c := range []struct {
		sets   []string
		hash   int
		fine   bool
		line   string
		unused string
	}{
		{[]string{"engine.prefix_match_unit=8"}, 8, true, "fine-grained prefix-cache hits on (enable_partial_hash_hits): a hit may end at any multiple of 8 tokens, inside a Mamba block", ""},
		{[]string{"engine.prefix_match_unit=32"}, 32, false, "", ""},
		{[]string{"engine.prefix_match_unit=8", "engine.mamba_cache_mode=all"}, 2048, false, "", "engine.prefix_match_unit 8 is not used: the Mamba groups are not in mamba_cache_mode align"},
		{nil, 32, false, "", ""},
	} {
		args := []string{"model", "tiny-hybrid"}
		for _, s := range c.sets {
			args = append(args, "--set", s)
		}
		code, out, errs := runCLI(args...)
		if code != exitClean {
			t.Fatalf("%v: exit %d: %s", c.sets, code, errs)
		}
		if c.line != "" && !strings.Contains(out, c.line) || c.line == "" && strings.Contains(out, "hits on (enable_partial_hash_hits)") {
			t.Errorf("%v: want %q:\n%s", c.sets, c.line, out)
		}
		if (c.unused != "") != strings.Contains(out, "is not used") || !strings.Contains(out, c.unused) {
			t.Errorf("%v: want %q:\n%s", c.sets, c.unused, out)
		}
		_, js, _ := runCLI(append(args, "--json")...)
		var v modelView
		if err := json.Unmarshal([]byte(js), &v); err != nil {
			t.Fatal(err)
		}
		if v.HashBlockSize != c.hash || v.FineGrainedHits != c.fine || !strings.HasPrefix(v.MatchUnitUnused, c.unused) || (c.unused == "") != (v.MatchUnitUnused == "") {
			t.Errorf("%v: --json hash %d, fine-grained %v, unused %q; want %d, %v, %q", c.sets, v.HashBlockSize, v.FineGrainedHits, v.MatchUnitUnused, c.hash, c.fine, c.unused)
		}
	}
}

// run --prefix-match-unit N is --set engine.prefix_match_unit=N: its
// errors name the flag's --set and the field.
func TestRunPrefixMatchUnitFlag(t *testing.T) {
	doc := "name: pmu\nmodel: {preset: tiny-hybrid}\nengine: {vllm_version: v0.31, enable_prefix_caching: true, mamba_cache_mode: all, num_gpu_blocks_override: 400}\n" +
		"workload: {kind: poisson, rate: 1, count: 2, prompt_len: {dist: constant, value: 64}, output_len: {dist: constant, value: 4}}\n"
	p := filepath.Join(t.TempDir(), "pmu.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI("run", p, "--prefix-match-unit", "8")
	if code != exitClean || !strings.Contains(out+errs, "engine.prefix_match_unit 8 is not used") {
		t.Errorf("all mode: exit %d, want the unused warning:\n%s%s", code, out, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--prefix-match-unit", "x"}, `(--set engine.prefix_match_unit=x): field engine.prefix_match_unit: want an integer, got "x"`},
		{[]string{"--prefix-match-unit", "8", "--set", "engine.vllm_version=v0.27"}, "field engine.prefix_match_unit: needs vLLM's #46384 (v0.28 on), which v0.27 lacks"},
		{[]string{"--prefix-match-unit", "12", "--set", "engine.mamba_cache_mode=align"}, "ValueError: Invalid prefix_match_unit=12;"},
	} {
		code, _, errs := runCLI(append([]string{"run", p}, c.args...)...)
		if code != exitBadInput || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want %q in %s", c.args, code, c.want, errs)
		}
	}
}

// check --prefix-match-unit is refused without prefix caching and at
// releases before #46384, naming the flag.
func TestCheckPrefixMatchUnitFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--prefix-match-unit", "8"}, "--prefix-match-unit applies only with --prefix-caching on or align"},
		{[]string{"check", "--prefix-match-unit", "8", "--prefix-caching", "align", "--version", "v0.22"}, "--prefix-match-unit needs vLLM's #46384 (v0.28 on)"},
	} {
		code, _, errs := runCLI(append(c.args, "--out", t.TempDir())...)
		if code != exitBadInput || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want %q in %s", c.args, code, c.want, errs)
		}
	}
}
