package scenarios

import (
	"strings"
	"testing"
)

const silentBase = "name: s\nmodel: {preset: tiny-hybrid}\nengine: {num_gpu_blocks_override: 256, max_num_seqs: 8}\nworkload: {kind: poisson, rate: 1, count: 1}\n"

// Integers are decimal, as vLLM's command line reads them: 010 is 10 in
// YAML and in --set (yaml.v3 read 8); 0x10 and 0o10 are refused.
func TestIntegersAreDecimal(t *testing.T) {
	for _, c := range []struct {
		yaml string
		sets []string
		want int
	}{
		{strings.Replace(silentBase, "max_num_seqs: 8", "max_num_seqs: 010", 1), nil, 10},
		{silentBase, []string{"engine.max_num_seqs=010"}, 10},
		{silentBase, []string{"engine.max_num_seqs=1_000"}, 1000},
		{silentBase, []string{"engine.max_num_seqs=+12"}, 12},
	} {
		sc, err := Parse([]byte(c.yaml), "s.yaml", c.sets)
		if err != nil || sc.Engine.MaxNumSeqs != c.want {
			t.Errorf("%v: max_num_seqs %v, %v; want %d", c.sets, sc, err, c.want)
			continue
		}
	}
	for _, v := range []string{"0x10", "0o10", "0b10", "1__0"} {
		_, err := Parse([]byte(silentBase), "s.yaml", []string{"engine.max_num_seqs=" + v})
		if err == nil || !strings.Contains(err.Error(), "written in decimal") {
			t.Errorf("max_num_seqs=%s: %v", v, err)
		}
	}
	if sc, err := Parse([]byte(silentBase), "s.yaml", []string{"seed=18446744073709551615"}); err != nil || sc.Seed != 18446744073709551615 {
		t.Errorf("largest uint64 seed: %v", err)
	}
}

// A --set of a whole section would reset the keys it leaves out (v0.13
// silently became the newest release); an index into a list cannot be
// set. Both are refused, saying what to write instead.
func TestSetWholeSectionRefused(t *testing.T) {
	for _, c := range []struct{ set, want string }{
		{"engine={max_num_seqs: 4}", "set each field"},
		{"workload={kind: poisson, rate: 2, count: 1}", "set each field"},
		{"engine.patches.0=+55898", "engine.patches is a list"},
	} {
		_, err := Parse([]byte(silentBase), "s.yaml", []string{c.set})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--set "+c.set) {
			t.Errorf("--set %s: %v", c.set, err)
		}
	}
	// A field's own value may still be a mapping.
	if _, err := Parse([]byte(silentBase), "s.yaml", []string{"workload.prompt_len={dist: constant, value: 7}"}); err != nil {
		t.Errorf("a distribution by --set: %v", err)
	}
}

// A setting that cannot apply is refused at its line, as rate_scale on a
// poisson workload was.
func TestInapplicableSettingsRefused(t *testing.T) {
	for _, c := range []struct{ extra, want string }{
		{"  path: x.csv\n", "field workload.path: does not apply to a poisson workload (only trace read it)"},
		{"  batch_size: 4\n", "field workload.batch_size: does not apply to a poisson workload"},
		{"  hash_block_tokens: 64\n", "field workload.hash_block_tokens: does not apply"},
		{"  think_time_s: 1\n", "field workload.think_time_s: does not apply"},
	} {
		doc := strings.Replace(silentBase, "workload: {kind: poisson, rate: 1, count: 1}\n", "workload:\n  kind: poisson\n  rate: 1\n  count: 1\n"+c.extra, 1)
		_, err := Parse([]byte(doc), "s.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "s.yaml:8:") {
			t.Errorf("%q: %v", c.extra, err)
		}
	}
	spec := "name: s\nmodel: {preset: tiny-hybrid}\nengine:\n  num_gpu_blocks_override: 256\n  speculative: {SPEC}\nworkload: {kind: poisson, rate: 1, count: 1}\n"
	// acceptance_rate without a method is a cross-field rule: setup's
	// (TestAcceptanceRateNeedsAMethod). Beside accepted it is loaded (generated scenarios draw both) and the
	// run warns (engine's TestAcceptanceRateBesideAcceptedWarns).
	doc := strings.Replace(spec, "SPEC", "method: ngram, num_speculative_tokens: 2, accepted: 1, acceptance_rate: 0.5", 1)
	if _, err := Parse([]byte(doc), "s.yaml", nil); err != nil {
		t.Errorf("accepted beside acceptance_rate: %v", err)
	}
}
