package prop

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"statesim/backend"
	"statesim/model"
	"statesim/scenarios"
	"statesim/sched"
	"statesim/setup"
)

// Plan is a search as asked for (statesim check's flags, as values):
// what to draw, which properties, how long to search. Settle turns it
// into the generator's Config with every rule across the choices applied;
// a flag's empty value means "not asked for".
type Plan struct {
	Seed       int64
	Trials     int
	MaxShrinks int
	// Versions: comma-separated vllm_version names, or all.
	Versions string
	// Matrix draws every dimension; the other choices pin one.
	Matrix bool
	// Async: on, off; Graphs: cudagraph_mode values.
	Async, Graphs []string
	// Bits: state_index_bits, N or LO-HI.
	Bits string
	// Models: presets or built-in configs, or all.
	Models []string
	// Specs: speculative methods; SpecK: N or LO-HI.
	Specs []string
	SpecK string
	// PromptLen: prompt lengths drawn, N or LO-HI ("": the base's).
	PromptLen string
	// Patches: one set (+N,-N) or several separated by "/".
	Patches []string
	// Runners: v1, v2, default.
	Runners []string
	// KVConnector: engine.kv_transfer_config.kv_connector of every
	// scenario ("": none).
	KVConnector string
	// Draft: the DFlash drafter, LAYERS:KV_HEADS:HEAD_DIM:WINDOW (with
	// --spec dflash).
	Draft string
	// PrefixCaching: on, align, all, off; Shared and HashBlock shape the
	// shared prefixes.
	PrefixCaching     []string
	Shared, HashBlock int
	// PrefixMatchUnit: engine.prefix_match_unit where it applies (0:
	// unset; with PrefixCaching).
	PrefixMatchUnit int
	Properties      []string
	Backend         string
	// Given names the choices set explicitly (flag names: version,
	// spec-k), which the matrix then pins.
	Given map[string]bool
}

// Search is a settled plan: the generator's bounds and the properties.
type Search struct {
	Config     Config
	Properties []Property
	Options    Options
}

// Settle applies the plan's rules. Every error is bad input and names
// the flag (--bits: ...).
func (p *Plan) Settle() (*Search, error) {
	bad := func(flag string, err error) (*Search, error) { return nil, fmt.Errorf("--%s: %w", flag, err) }
	if p.Trials < 1 {
		return nil, fmt.Errorf("--trials must be >= 1, got %d", p.Trials)
	}
	if p.MaxShrinks < 1 {
		return nil, fmt.Errorf("--max-shrinks must be >= 1, got %d", p.MaxShrinks)
	}
	versions, err := parseVersions(p.Versions)
	if err != nil {
		return bad("version", err)
	}
	lo, hi, err := ParseRange(p.Bits, scenarios.MinStateIndexBits, scenarios.MaxStateIndexBits, " "+scenarios.StateIndexBitsNote)
	if err != nil {
		return bad("bits", err)
	}
	ps, err := ByName(p.Properties)
	if err != nil {
		return bad("property", err)
	}
	cfg, models := p.base(versions[0], lo)
	if !p.Matrix || p.Given["version"] {
		cfg.Versions = versions
	}
	if err := served(cfg); err != nil {
		return nil, err
	}
	cfg.MinBits, cfg.MaxBits = lo, hi
	for _, step := range []func(*Config) error{p.patches, p.runners, p.spec, p.prefix, p.matchUnit, p.async, p.graphs, p.connector, p.draft, p.prompts} {
		if err := step(&cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.Validate(); err != nil && len(models) > 0 {
		return bad("model", err)
	}
	switch p.Backend {
	case "symbolic":
	case "mock", "cuda":
		if ok, why := backend.Available(p.Backend); !ok {
			return nil, fmt.Errorf("--backend %s: %s", p.Backend, why)
		}
		cfg = Numeric(cfg, p.Backend)
	default:
		return nil, fmt.Errorf("--backend: unknown %q (want symbolic, mock or cuda)", p.Backend)
	}
	return &Search{Config: cfg, Properties: ps, Options: Options{Seed: p.Seed, Trials: p.Trials, MaxShrinks: p.MaxShrinks}}, nil
}

// base is the generator's starting point for the models and index widths
// asked for: bug B's tiny pools below 64 bits, bug A's set-up for a named
// release, the GDN builder's models when models are named.
func (p *Plan) base(version string, lo int) (Config, []string) {
	models := p.Models
	if len(models) == 1 && models[0] == "all" {
		models = MatrixModels()
	}
	cfg := DefaultConfig()
	if lo < 64 {
		cfg = BugB()
	} else if version != "fixed" && version != "v0" {
		cfg = BugA(version)
	}
	switch {
	case len(models) > 0 && lo < 64:
		cfg.Presets = models
	case len(models) > 0:
		// Named models draw prompts from one token: a brand-new 1-token
		// prompt is the GDN builder's imposter (vLLM issue #51562).
		cfg = GDN(version, models...)
	case lo == 64:
		// By default the search also covers the GDN builder's models,
		// after the presets (choices shrink towards the front), and
		// prompts from one token, their imposter's usual trigger.
		cfg.Presets = append(slices.Clone(cfg.Presets), GDNModels...)
		cfg.MinPrompt = 1
	}
	if p.Matrix {
		cfg = Matrix(cfg)
		if len(models) > 0 {
			cfg.Presets = models
		}
	}
	return cfg, models
}

// served refuses a model some drawn release does not serve (Kimi-K3
// before v0.27): bad input, not a counterexample. Unknown names are the
// search's to report.
func served(cfg Config) error {
	for _, m := range cfg.Presets {
		sh, err := model.Preset(m)
		if err != nil {
			if sh, err = scenarios.ReadHFConfig(m, ""); err != nil {
				continue
			}
		}
		for _, v := range cfg.Versions {
			if err := setup.ServedBy(&sh, v); err != nil {
				return fmt.Errorf("--model %s: %w", m, err)
			}
		}
	}
	return nil
}

func (p *Plan) patches(cfg *Config) error {
	if len(p.Patches) == 0 {
		return nil
	}
	sets, err := parsePatchSets(p.Patches)
	if err != nil {
		return fmt.Errorf("--patches: %w", err)
	}
	for _, v := range cfg.Versions {
		r, _ := sched.ParseVersion(v)
		for _, set := range sets {
			if len(set) == 0 {
				continue
			}
			if _, err := sched.Patched(r, set); err != nil {
				return fmt.Errorf("--patches: %s: %w", v, err)
			}
		}
	}
	if len(sets) == 1 {
		cfg.Patches = sets[0]
	} else {
		cfg.PatchSets = sets
	}
	return nil
}

// matchUnit sets engine.prefix_match_unit for the scenarios where vLLM
// takes it (Params.PrefixMatchUnit): it needs prefix caching drawn and a
// release with #46384, the PR that added it.
func (p *Plan) matchUnit(cfg *Config) error {
	u := p.PrefixMatchUnit
	switch {
	case u == 0:
		return nil
	case u < 0:
		return fmt.Errorf("--prefix-match-unit: want a token count >= 1 (0: unset), got %d", u)
	case !slices.ContainsFunc(cfg.CacheModes, func(m string) bool { return m == "on" || m == "align" }):
		return fmt.Errorf("--prefix-match-unit applies only with --prefix-caching on or align (the hash block is finer than a block only in align mode)")
	}
	sets := cfg.PatchSets
	if len(sets) == 0 {
		sets = [][]string{cfg.Patches}
	}
	for _, v := range cfg.Versions {
		r, err := sched.ParseVersion(v)
		if err != nil || r == sched.V0 {
			continue
		}
		for _, set := range sets {
			if pv, err := sched.Patched(r, set); err == nil && pv.Behaviour().PartialHashHits {
				cfg.PrefixMatchUnit = u
				return nil
			}
		}
	}
	return fmt.Errorf("--prefix-match-unit needs vLLM's #46384 (v0.28 on), which no version drawn has (%s)", strings.Join(cfg.Versions, ","))
}

// connector sets every scenario's KV connector, refusing one without
// SupportsHMA on a drawn Mamba hybrid, as setup does.
func (p *Plan) connector(cfg *Config) error {
	c, err := sched.ParseConnector(p.KVConnector)
	if err != nil {
		return fmt.Errorf("--kv-connector: %w", err)
	}
	if !c.SupportsHMA() && c != sched.ConnectorNone {
		for _, m := range cfg.Presets {
			if sh, err := model.Preset(m); err == nil && sh.NumMambaLayers() > 0 {
				return fmt.Errorf("--kv-connector: %s does not support the hybrid KV cache manager, which Mamba hybrids (%s) need", c, m)
			}
		}
	}
	cfg.KVConnector = p.KVConnector
	return nil
}

// draft reads --draft into every dflash scenario's drafter; --spec dflash
// needs it, and it needs --spec dflash.
func (p *Plan) draft(cfg *Config) error {
	dflash := slices.Contains(p.Specs, "dflash")
	switch {
	case p.Draft == "" && dflash:
		return fmt.Errorf("--spec dflash needs --draft LAYERS:KV_HEADS:HEAD_DIM:WINDOW (the drafter's num_hidden_layers, num_key_value_heads, head_dim and sliding_window)")
	case p.Draft == "":
		return nil
	case !dflash:
		return fmt.Errorf("--draft applies only with --spec dflash")
	}
	f := strings.Split(p.Draft, ":")
	v := make([]int, len(f))
	for i, x := range f {
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil || n <= 0 {
			v = nil
			break
		}
		v[i] = n
	}
	if len(v) != 4 {
		return fmt.Errorf("--draft: want LAYERS:KV_HEADS:HEAD_DIM:WINDOW, four positive integers, got %q", p.Draft)
	}
	cfg.Draft = scenarios.DraftConfig{NumHiddenLayers: v[0], NumKeyValueHeads: v[1], HeadDim: v[2], SlidingWindow: v[3]}
	return nil
}

func (p *Plan) runners(cfg *Config) error {
	if len(p.Runners) == 0 {
		return nil
	}
	var rs []string
	for _, r := range p.Runners {
		if r == "default" {
			r = ""
		} else if _, err := sched.ParseRunner(r); err != nil {
			return fmt.Errorf("--model-runner: %w (or default)", err)
		}
		rs = append(rs, r)
	}
	if len(cfg.Versions) == 1 && cfg.Versions[0] == "v0" {
		return fmt.Errorf("--model-runner: the v0 control has no V1 engine model runner")
	}
	if len(rs) == 1 {
		cfg.ModelRunner = rs[0]
	} else {
		cfg.ModelRunners = rs
	}
	return nil
}

func (p *Plan) spec(cfg *Config) error {
	if p.Given["spec-k"] && len(p.Specs) == 0 && !p.Matrix {
		return fmt.Errorf("--spec-k applies only with --spec METHOD (or --matrix): without it no draft tokens are drawn")
	}
	if len(p.Specs) == 0 && !(p.Matrix && p.Given["spec-k"]) {
		return nil
	}
	klo, khi, err := ParseRange(p.SpecK, 1, 16, "")
	if err != nil {
		return fmt.Errorf("--spec-k: %w", err)
	}
	specs := p.Specs
	if len(specs) == 0 {
		specs = cfg.SpecMethods
	}
	*cfg = Spec(*cfg, klo, khi, specs...)
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("--spec: %w", err)
	}
	return nil
}

// maxPromptLen bounds --prompt-len: the largest prompt any preset's
// max_model_len in the searches leaves room for is far below it.
const maxPromptLen = 1 << 20

// prompts narrows the prompt lengths drawn (--prompt-len), so that a
// search can aim at one shape: a tail one token past a shared prefix.
func (p *Plan) prompts(cfg *Config) error {
	if p.PromptLen == "" {
		return nil
	}
	lo, hi, err := ParseRange(p.PromptLen, 1, maxPromptLen, "")
	if err != nil {
		return fmt.Errorf("--prompt-len: %w", err)
	}
	cfg.MinPrompt, cfg.MaxPrompt = lo, hi
	return nil
}

func (p *Plan) prefix(cfg *Config) error {
	if len(p.PrefixCaching) == 0 {
		return nil
	}
	var modes []string
	for _, m := range p.PrefixCaching {
		if m == "off" {
			m = ""
		}
		modes = append(modes, m)
	}
	if p.HashBlock < 1 {
		return fmt.Errorf("--hash-block: want at least 1 token per shared hash id, got %d", p.HashBlock)
	}
	if p.Shared < 0 {
		return fmt.Errorf("--shared: want 0 or more shared hash ids per prompt, got %d", p.Shared)
	}
	*cfg = Prefix(*cfg, p.HashBlock, p.Shared, modes...)
	// Asked for by name, align keeps prefix caching under spec decode on
	// a hybrid (the pair vLLM runs); the matrix's draws stay as they were.
	cfg.SpecAlign = !p.Matrix
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("--prefix-caching: %w", err)
	}
	return nil
}

func (p *Plan) async(cfg *Config) error {
	if len(p.Async) == 0 {
		return nil
	}
	cfg.Async = nil
	for _, a := range p.Async {
		if a != "on" && a != "off" {
			return fmt.Errorf("--async: %q: want on or off", a)
		}
		cfg.Async = append(cfg.Async, a == "on")
	}
	return nil
}

func (p *Plan) graphs(cfg *Config) error {
	if len(p.Graphs) == 0 {
		return nil
	}
	cfg.CUDAGraphModes = p.Graphs
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("--cudagraph: %w", err)
	}
	return nil
}

// Describe is the search's header line: the seed, the trials and every
// choice asked for.
func (p *Plan) Describe(s *Search, sets []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "statesim check: seed %d, %d trials per property, vLLM %s, %s-bit state index", p.Seed, p.Trials, strings.Join(s.Config.Versions, ","), p.Bits)
	if p.Matrix {
		b.WriteString(", matrix")
	}
	for _, c := range []struct {
		what string
		v    []string
		sep  string
	}{{"async", p.Async, ","}, {"cudagraph_mode", p.Graphs, ","}, {"models", p.Models, ", "}, {"patches", p.Patches, ","}, {"model runner", p.Runners, ","}} {
		if len(c.v) > 0 {
			fmt.Fprintf(&b, ", %s %s", c.what, strings.Join(c.v, c.sep))
		}
	}
	if len(p.Specs) > 0 {
		fmt.Fprintf(&b, ", speculative %s K %s", strings.Join(p.Specs, ","), p.SpecK)
	}
	if p.PromptLen != "" {
		fmt.Fprintf(&b, ", prompts %s tokens", p.PromptLen)
	}
	if p.PrefixMatchUnit > 0 {
		fmt.Fprintf(&b, ", prefix_match_unit %d", p.PrefixMatchUnit)
	}
	if len(sets) > 0 {
		fmt.Fprintf(&b, ", --set %s", strings.Join(sets, " --set "))
	}
	if n := guardNote(s.Config); n != "" {
		b.WriteString("\n" + n)
	}
	return b.String()
}

// guardNote says when +53059 is inert in some of the scenarios cfg draws:
// the PR edits V1's GPUModelRunner._is_uniform_decode, and under Model
// Runner V2 (set, or the release's default) the dispatch stays shape-only.
func guardNote(cfg Config) string {
	sets := cfg.PatchSets
	if len(sets) == 0 {
		sets = [][]string{cfg.Patches}
	}
	runners := cfg.ModelRunners
	if len(runners) == 0 {
		runners = []string{cfg.ModelRunner}
	}
	var inert []string
	for _, v := range cfg.Versions {
		if v == "v0" {
			continue
		}
	search:
		for _, set := range sets {
			for _, r := range runners {
				if ignored, _ := setup.GuardIgnored(v, r, set); ignored {
					inert = append(inert, v)
					break search
				}
			}
		}
	}
	if len(inert) == 0 {
		return ""
	}
	return "note: +53059 changes nothing under model runner v2 (the default from v0.29 unless --model-runner v1), here at " + strings.Join(inert, ",") + ": it edits V1's GPUModelRunner._is_uniform_decode only"
}

// parseVersions reads a comma-separated list of vllm_version names, or
// all: every V1 release modelled.
func parseVersions(s string) ([]string, error) {
	if s == "all" {
		return Releases(), nil
	}
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		if _, err := sched.ParseVersion(v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// parsePatchSets reads --patches: one set, or several separated by "/"
// (none: the release as shipped).
func parsePatchSets(list []string) ([][]string, error) {
	var sets [][]string
	var cur []string
	for _, p := range list {
		for i, part := range strings.Split(p, "/") {
			if i > 0 {
				sets, cur = append(sets, cur), nil
			}
			if part = strings.TrimSpace(part); part != "" && part != "none" {
				cur = append(cur, part)
			}
		}
	}
	sets = append(sets, cur)
	for _, set := range sets {
		for _, p := range set {
			if !strings.HasPrefix(p, "+") && !strings.HasPrefix(p, "-") {
				return nil, fmt.Errorf("%q: want +N or -N", p)
			}
		}
	}
	return sets, nil
}

// ParseRange reads N or LO-HI within [lo0, hi0]; note ends the
// out-of-range message.
func ParseRange(s string, lo0, hi0 int, note string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = strconv.Atoi(a); err != nil {
		return 0, 0, fmt.Errorf("want N or LO-HI, got %q", s)
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(b); err != nil {
			return 0, 0, fmt.Errorf("want N or LO-HI, got %q", s)
		}
	}
	if lo < lo0 || hi > hi0 || hi < lo {
		return 0, 0, fmt.Errorf("%q is outside %d..%d%s", s, lo0, hi0, note)
	}
	return lo, hi, nil
}
