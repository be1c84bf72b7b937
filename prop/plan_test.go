package prop

import (
	"strings"
	"testing"
)

func defaultPlan() Plan {
	return Plan{Seed: 1, Trials: 10, MaxShrinks: 10, Versions: "fixed", Bits: "64", SpecK: "1-4", Shared: 3, HashBlock: 64, Backend: "symbolic"}
}

// A plan settles into the generator's bounds; each refused choice names
// its flag.
func TestPlanSettles(t *testing.T) {
	p := defaultPlan()
	s, err := p.Settle()
	if err != nil {
		t.Fatal(err)
	}
	if s.Config.MinPrompt != 1 || !strings.Contains(strings.Join(s.Config.Presets, ","), GDNModels[0]) || len(s.Properties) == 0 {
		t.Errorf("default plan: %+v", s.Config)
	}
	if d := p.Describe(s, nil); !strings.HasPrefix(d, "statesim check: seed 1, 10 trials per property, vLLM fixed, 64-bit state index") {
		t.Errorf("header %q", d)
	}
	for _, c := range []struct {
		edit func(*Plan)
		want string
	}{
		{func(p *Plan) { p.Bits = "8" }, "--bits: "},
		{func(p *Plan) { p.Async = []string{"maybe"} }, `--async: "maybe": want on or off`},
		{func(p *Plan) { p.Versions, p.Runners = "v0", []string{"v1"} }, "--model-runner: the v0 control has no V1 engine model runner"},
		{func(p *Plan) { p.Patches = []string{"53059"} }, `--patches: "53059": want +N or -N`},
		{func(p *Plan) { p.Backend = "tpu" }, `--backend: unknown "tpu"`},
		{func(p *Plan) { p.Trials = 0 }, "--trials must be >= 1"},
		{func(p *Plan) { p.Versions, p.Models = "v0.22", []string{"kimi-k3"} }, "--model kimi-k3: vLLM v0.22 does not serve Kimi-K3"},
		{func(p *Plan) { p.PromptLen = "0-70" }, `--prompt-len: "0-70" is outside 1..`},
		{func(p *Plan) { p.PromptLen = "70-60" }, `--prompt-len: "70-60" is outside`},
		{func(p *Plan) { p.PromptLen = "sixty" }, `--prompt-len: want N or LO-HI`},
	} {
		p := defaultPlan()
		c.edit(&p)
		if _, err := p.Settle(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
	// --prompt-len narrows the prompts drawn and is in the header.
	p = defaultPlan()
	p.PromptLen = "60-70"
	if s, err := p.Settle(); err != nil || s.Config.MinPrompt != 60 || s.Config.MaxPrompt != 70 || !strings.Contains(p.Describe(s, nil), ", prompts 60-70 tokens") {
		t.Errorf("--prompt-len 60-70: %v", err)
	}
	// +53059 under Model Runner V2 (v0.31's default) is noted as inert.
	p = defaultPlan()
	p.Versions, p.Patches = "v0.31", []string{"+53059"}
	if s, err := p.Settle(); err != nil || !strings.Contains(p.Describe(s, nil), "note: +53059 changes nothing under model runner v2") {
		t.Errorf("guard note: %v", err)
	}
}

// --prefix-match-unit needs prefix caching and a release with #46384;
// the generated scenarios carry engine.prefix_match_unit only where vLLM
// takes it: a release with #46384, align mode, a unit that divides the
// blocks (the tiny hybrid's 32, not Jamba-3B's 176 for 32).
func TestPlanPrefixMatchUnit(t *testing.T) {
	for _, c := range []struct {
		edit func(*Plan)
		want string
	}{
		{func(p *Plan) { p.PrefixMatchUnit = 8 }, "--prefix-match-unit applies only with --prefix-caching on or align"},
		{func(p *Plan) { p.PrefixMatchUnit, p.PrefixCaching = 8, []string{"all"} }, "--prefix-match-unit applies only with --prefix-caching on or align"},
		{func(p *Plan) { p.PrefixMatchUnit, p.PrefixCaching, p.Versions = 8, []string{"align"}, "v0.19,v0.22" }, "needs vLLM's #46384 (v0.28 on), which no version drawn has (v0.19,v0.22)"},
		{func(p *Plan) {
			p.PrefixMatchUnit, p.PrefixCaching, p.Patches = 8, []string{"align"}, []string{"-46384"}
		}, "which no version drawn has (fixed)"},
		{func(p *Plan) { p.PrefixMatchUnit, p.PrefixCaching = -4, []string{"align"} }, "--prefix-match-unit: want a token count >= 1"},
	} {
		p := defaultPlan()
		c.edit(&p)
		if _, err := p.Settle(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
	p := defaultPlan()
	p.PrefixMatchUnit, p.PrefixCaching, p.Versions = 8, []string{"align"}, "v0.22,v0.31"
	s, err := p.Settle()
	if err != nil || s.Config.PrefixMatchUnit != 8 || !strings.Contains(p.Describe(s, nil), ", prefix_match_unit 8") {
		t.Fatalf("v0.22,v0.31: %v, %+v", err, s)
	}
	base := Params{MaxNumSeqs: 2, Requests: []Request{{Prompt: 40, Output: 2}}, MaxNumBatchedTokens: 64, StateIndexBits: 64, Seed: 1,
		Policy: "fcfs", ChunkedPrefill: true, Backend: "symbolic", CacheMode: "align", HashBlock: 64, PrefixMatchUnit: 8}
	for _, c := range []struct {
		preset, version, mode string
		unit                  int
	}{
		{"tiny-hybrid", "v0.31", "align", 8},
		{"tiny-hybrid", "v0.28", "align", 8},
		{"tiny-hybrid", "v0.22", "align", 0},
		{"tiny-hybrid", "v0.31", "all", 0},
		{"jamba-reasoning-3b", "v0.31", "align", 8},
	} {
		q := base
		q.Preset, q.Version, q.CacheMode = c.preset, c.version, c.mode
		for _, unit := range []int{8, 32} {
			q.PrefixMatchUnit = unit
			sc, err := q.Scenario("g", "t.jsonl")
			if err != nil {
				t.Fatalf("%+v: %v", c, err)
			}
			want := c.unit
			if want > 0 {
				want = unit
				if c.preset == "jamba-reasoning-3b" && unit == 32 {
					want = 0 // 176 % 32 != 0: vLLM's ValueError
				}
			}
			if sc.Engine.PrefixMatchUnit != want {
				t.Errorf("%s %s %s, unit %d: prefix_match_unit %d, want %d", c.preset, c.version, c.mode, unit, sc.Engine.PrefixMatchUnit, want)
			}
		}
	}
}
