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
