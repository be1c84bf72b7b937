package prop

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"

	"statesim/scenarios"
	"statesim/sched"
	"statesim/setup"
)

// Config bounds the generated scenarios. Ranges are inclusive; every
// numeric field shrinks towards its lower bound, choices do not shrink.
type Config struct {
	// Presets lists the models to draw: presets, or model configs built
	// into the binary (a model kind each: GDNModels).
	Presets  []string
	Versions []string
	Policies []string
	Backends []string
	// ChunkedPrefill lists the enable_chunked_prefill values to draw.
	ChunkedPrefill []bool

	MinRequests, MaxRequests int
	MinPrompt, MaxPrompt     int
	MinOutput, MaxOutput     int
	MaxGapUS                 int
	MinBudget, MaxBudget     int // max_num_batched_tokens
	MaxSeqs                  int // max_num_seqs drawn from 1..MaxSeqs
	MaxExtraBlocks           int
	// MaxLongPrefill > 0 draws long_prefill_token_threshold from
	// 0..MaxLongPrefill (0 = off).
	MaxLongPrefill   int
	MinBits, MaxBits int // state_index_bits
	// CUDAGraphMode is every scenario's engine.cudagraph_mode ("": the
	// default, none).
	CUDAGraphMode string
	// Patches are every scenario's engine.patches.
	Patches []string
	// ModelRunner is every scenario's engine.model_runner ("": the
	// release's default).
	ModelRunner string
	// SpecMethods lists the speculative decoding methods to draw (mtp,
	// eagle, ngram; empty: off); K is drawn from MinSpecK..MaxSpecK, the
	// acceptance as a fixed count (-1..K, -1 meaning per-token) and a
	// per-token rate in percent.
	SpecMethods        []string
	MinSpecK, MaxSpecK int
	// CacheModes lists the prefix-caching settings to draw (Params.
	// CacheMode: "", on, align, all; empty: off). MaxShared > 0 draws each
	// request's shared prefix, 0..MaxShared ids of HashBlock tokens from
	// one of Families prompts.
	CacheModes           []string
	MaxShared, HashBlock int
	Families             int
	// PatchSets, when set, are the engine.patches to draw from (an empty
	// set: the release as shipped), in place of Patches.
	PatchSets [][]string
	// Async lists the engine.async_scheduling values to draw (empty:
	// off; the v0 control and the numeric backends run it off).
	Async []bool
	// CUDAGraphModes, when set, lists the engine.cudagraph_mode values to
	// draw, in place of CUDAGraphMode.
	CUDAGraphModes []string
	// ModelRunners, when set, lists the engine.model_runner values to
	// draw ("": the release's default), in place of ModelRunner.
	ModelRunners []string
	// SpecAlign: see Params.SpecAlign.
	SpecAlign bool
	// MaxHostStepUS > 0 draws timing.host_step_us from 0..MaxHostStepUS.
	MaxHostStepUS int
	// KVConnector is every scenario's engine.kv_transfer_config.
	// kv_connector ("": none).
	KVConnector string
	// Draft is the DFlash drafter every dflash scenario runs (its
	// config.json's geometry: never drawn).
	Draft scenarios.DraftConfig
	// PrefixMatchUnit is engine.prefix_match_unit where it applies
	// (Params.PrefixMatchUnit; 0: unset).
	PrefixMatchUnit int
}

// Matrix is c drawing every dimension the simulator models: every
// release from v0.13, the hybrid presets and every built-in model config
// with state layers (Mamba1, Mamba2, GDN, KDA, ...), speculative
// decoding off or MTP, EAGLE or ngram with K in 1..4, async scheduling on
// and off, prefix caching off, on (the release's mode), align and all
// over shared-prefix prompts, and CUDA graphs off (eager) or
// full_and_piecewise (vLLM's default). Callers pin a dimension by
// setting it afterwards.
func Matrix(c Config) Config {
	c.Versions = Releases()
	c.Presets = MatrixModels()
	c.MinPrompt = 1
	c.SpecMethods, c.MinSpecK, c.MaxSpecK = []string{"off", "mtp", "eagle", "ngram"}, 1, 4
	c.Async = []bool{false, true}
	c = Prefix(c, 64, 3, "", "on", "align", "all")
	c.CUDAGraphModes = []string{"none", "full_and_piecewise"}
	return c
}

// Releases lists the V1 releases sched models, oldest first.
func Releases() []string {
	var out []string
	for _, v := range sched.VersionNames() {
		if v != "v0" && v != "fixed" {
			out = append(out, v)
		}
	}
	return out
}

// MatrixModels lists the hybrid presets, then every built-in model
// config with state layers that v0.13 serves: the matrix draws every
// release from v0.13, and vLLM serves Kimi-K3 from v0.27 and Qwen3.5
// from v0.19 only (scenarios.Serves), so they are searched by name
// (--model kimi-k3).
func MatrixModels() []string {
	out := slices.Clone(HybridPresets)
	for _, m := range scenarios.BuiltinModels() {
		if s, err := shapeOf(m); err == nil && s.NumMambaLayers() > 0 && setup.ServedBy(&s, "v0.13") == nil {
			out = append(out, m)
		}
	}
	return out
}

// Prefix is c drawing prefix caching in modes (on, align, all; "" off)
// over prompts that share up to maxShared ids of hashBlock tokens, in
// three families.
func Prefix(c Config, hashBlock, maxShared int, modes ...string) Config {
	c.CacheModes, c.HashBlock, c.MaxShared, c.Families = modes, hashBlock, maxShared, 3
	return c
}

// Spec is c drawing speculative decoding with methods and K in lo..hi.
func Spec(c Config, lo, hi int, methods ...string) Config {
	c.SpecMethods, c.MinSpecK, c.MaxSpecK = methods, lo, hi
	return c
}

// DefaultConfig draws small scenarios over every preset with the fixed
// version and a 64-bit index: everything in it must hold.
func DefaultConfig() Config {
	return Config{
		Presets:        SimplestFirst,
		Versions:       []string{"v0.31"}, // the newest modelled ("fixed" is its alias)
		Policies:       []string{"fcfs", "priority"},
		Backends:       []string{"symbolic"},
		ChunkedPrefill: []bool{true, true, true, false},
		MinRequests:    1, MaxRequests: 6,
		MinPrompt: 2, MaxPrompt: 160,
		MinOutput: 1, MaxOutput: 24,
		MaxGapUS:  20_000,
		MinBudget: 1, MaxBudget: 192,
		MaxSeqs:        6,
		MaxExtraBlocks: 24,
		MaxLongPrefill: 48,
		MinBits:        64, MaxBits: 64,
	}
}

// SimplestFirst lists every preset, the tiny ones first: choices shrink
// towards the front.
var SimplestFirst = []string{"tiny-hybrid", "tiny-attention", "jamba-reasoning-3b", "attention-only-3b", "mamba-only-3b", "jamba-mini"}

// HybridPresets are the presets with Mamba layers, where bug A can show.
var HybridPresets = []string{"tiny-hybrid", "jamba-reasoning-3b", "jamba-mini"}

// BugA is the default config narrowed to hybrid models under a version.
func BugA(version string) Config {
	c := DefaultConfig()
	c.Presets = HybridPresets
	c.Versions = []string{version}
	return c
}

// GDNModels are built-in configs whose state layers vLLM's Gated
// DeltaNet metadata builder (gdn_attn.py) splits: Qwen3-Next's Gated
// DeltaNet, and Kimi Linear's KDA, which runs on the GDN backend.
var GDNModels = []string{"qwen3-next-80b-a3b", "kimi-linear-48b-a3b"}

// GDN is BugA over the GDN builder's models (all of GDNModels when none
// is named), with prompts from one token: a brand-new 1-token prompt is
// the GDN imposter's usual trigger (vLLM issue #51562).
func GDN(version string, models ...string) Config {
	c := BugA(version)
	c.Presets = GDNModels
	if len(models) > 0 {
		c.Presets = models
	}
	c.MinPrompt = 1
	return c
}

// BugB draws the tiny hybrid (stride 1024 elements, so a 16..20-bit index
// wraps from slot 64..1024) with pools of a few hundred blocks, and
// prompts long enough (up to 2048 tokens, 64 attention blocks of 32) that
// one request can walk the free queue past the first wrapping slot.
func BugB() Config {
	c := DefaultConfig()
	c.Presets = []string{"tiny-hybrid"}
	c.MinBits, c.MaxBits = 16, 20
	c.MaxRequests = 12
	c.MaxPrompt = 2048
	// Budgets of a few hundred tokens: the wrap does not care, and a
	// small budget only makes every run (and every shrink candidate) take
	// more steps.
	c.MinBudget, c.MaxBudget = 256, 2048
	c.MaxExtraBlocks = 400
	return c
}

// Validate checks the bounds, so generation never has to.
func (c *Config) Validate() error {
	for _, p := range c.Presets {
		if _, err := shapeOf(p); err != nil {
			return err
		}
	}
	for _, v := range c.Versions {
		if _, err := sched.ParseVersion(v); err != nil {
			return err
		}
	}
	for _, p := range c.Policies {
		if p != "fcfs" && p != "priority" {
			return fmt.Errorf("unknown scheduling policy %q", p)
		}
	}
	for _, b := range c.Backends {
		if b != "symbolic" && b != "mock" && b != "cuda" {
			return fmt.Errorf("unknown backend %q", b)
		}
	}
	if len(c.Presets) == 0 || len(c.Versions) == 0 || len(c.Policies) == 0 || len(c.Backends) == 0 || len(c.ChunkedPrefill) == 0 {
		return fmt.Errorf("every choice list needs at least one entry")
	}
	for _, r := range []struct {
		name   string
		lo, hi int
		min    int
	}{
		{"requests", c.MinRequests, c.MaxRequests, 1}, {"prompt", c.MinPrompt, c.MaxPrompt, 1},
		{"output", c.MinOutput, c.MaxOutput, 1}, {"max_num_batched_tokens", c.MinBudget, c.MaxBudget, 1},
		{"state_index_bits", c.MinBits, c.MaxBits, scenarios.MinStateIndexBits}, {"max_num_seqs", 1, c.MaxSeqs, 1},
	} {
		if r.lo < r.min || r.hi < r.lo {
			return fmt.Errorf("%s range [%d, %d] is empty or below %d", r.name, r.lo, r.hi, r.min)
		}
	}
	for _, m := range c.SpecMethods {
		if _, err := sched.ParseSpecMethod(m); m != "off" && (err != nil || m == "") {
			return fmt.Errorf("speculative method %q: want off, mtp, eagle or ngram", m)
		}
	}
	for _, set := range c.PatchSets {
		for _, v := range c.Versions {
			if r, err := sched.ParseVersion(v); err == nil && len(set) > 0 {
				if _, err := sched.Patched(r, set); err != nil {
					return fmt.Errorf("patch set %v on %s: %w", set, v, err)
				}
			}
		}
	}
	for _, m := range c.CUDAGraphModes {
		if _, err := sched.ParseCUDAGraphMode(m); err != nil {
			return fmt.Errorf("cudagraph_mode: %w", err)
		}
	}
	for _, r := range append(slices.Clone(c.ModelRunners), c.ModelRunner) {
		if _, err := sched.ParseRunner(r); r != "" && err != nil {
			return fmt.Errorf("model_runner: %w", err)
		}
	}
	if len(c.SpecMethods) > 0 && (c.MinSpecK < 1 || c.MaxSpecK < c.MinSpecK || c.MaxSpecK > 16) {
		return fmt.Errorf("num_speculative_tokens range [%d, %d] is empty or outside [1, 16]", c.MinSpecK, c.MaxSpecK)
	}
	for _, m := range c.CacheModes {
		if m != "" && m != "on" && m != "align" && m != "all" {
			return fmt.Errorf("prefix caching mode %q: want on, align, all or \"\" (off)", m)
		}
	}
	if c.MaxShared < 0 || c.MaxShared > 0 && (c.HashBlock < 1 || c.Families < 1) {
		return fmt.Errorf("shared prefixes: %d ids of %d tokens in %d families", c.MaxShared, c.HashBlock, c.Families)
	}
	if c.MaxBits > scenarios.MaxStateIndexBits || c.MaxGapUS < 0 || c.MaxExtraBlocks < 0 || c.MaxLongPrefill < 0 {
		return fmt.Errorf("bad bounds: bits ≤ 64, gaps, extra blocks and threshold ≥ 0")
	}
	return nil
}

// Gen generates *Params under c. Built from gen.StructPtr and integer
// ranges so gopter shrinks field by field, each number towards its lower
// bound and the request list by dropping requests.
func Gen(c Config) gopter.Gen {
	consts := func(xs []string) gopter.Gen {
		a := make([]any, len(xs))
		for i, x := range xs {
			a[i] = x
		}
		return choice(a)
	}
	bools := make([]any, len(c.ChunkedPrefill))
	for i, b := range c.ChunkedPrefill {
		bools[i] = b
	}
	reqFields := map[string]gopter.Gen{
		"GapUS":  intRange(0, c.MaxGapUS),
		"Prompt": intRange(c.MinPrompt, c.MaxPrompt),
		"Output": intRange(c.MinOutput, c.MaxOutput),
		"Family": gen.Const(0), "Shared": gen.Const(0),
	}
	if c.MaxShared > 0 {
		reqFields["Family"], reqFields["Shared"] = intRange(0, c.Families-1), intRange(0, c.MaxShared)
	}
	req := gen.Struct(reflect.TypeOf(Request{}), reqFields)
	spec := map[string]gopter.Gen{
		"SpecMethod": gen.Const(""), "SpecK": gen.Const(0), "SpecAccepted": gen.Const(-1), "SpecRatePct": gen.Const(0),
	}
	if len(c.SpecMethods) > 0 {
		methods := slices.Clone(c.SpecMethods)
		for i, m := range methods {
			if m == "off" {
				methods[i] = ""
			}
		}
		spec = map[string]gopter.Gen{
			"SpecMethod":   consts(methods),
			"SpecK":        intRange(c.MinSpecK, c.MaxSpecK),
			"SpecAccepted": intRange(-1, c.MaxSpecK),
			"SpecRatePct":  intRange(0, 100),
		}
	}
	fields := map[string]gopter.Gen{
		"Requests":                  requests(req, c.MinRequests, c.MaxRequests, c.MaxPrompt),
		"MaxNumBatchedTokens":       intRange(c.MinBudget, c.MaxBudget),
		"MaxNumSeqs":                intRange(1, c.MaxSeqs),
		"ExtraBlocks":               intRange(0, c.MaxExtraBlocks),
		"LongPrefillTokenThreshold": intRange(0, c.MaxLongPrefill),
		"StateIndexBits":            intRange(c.MinBits, c.MaxBits),
		// Seeds do not shrink: a different seed is a different scenario,
		// not a smaller one.
		"Seed":           gen.UInt64Range(1, 1<<32).WithShrinker(gopter.NoShrinker),
		"Preset":         consts(c.Presets),
		"Version":        consts(c.Versions),
		"Policy":         consts(c.Policies),
		"ChunkedPrefill": choice(bools),
		"Backend":        consts(c.Backends),
		"CUDAGraphMode":  gen.Const(c.CUDAGraphMode),
		"Patches":        gen.Const(c.Patches),
		"ModelRunner":    gen.Const(c.ModelRunner),
		"CacheMode":      gen.Const(""),
		"HashBlock":      gen.Const(c.HashBlock),
	}
	if len(c.CacheModes) > 0 {
		fields["CacheMode"] = consts(c.CacheModes)
	}
	// The matrix's other dimensions draw nothing unless listed, so other
	// configs generate what they did before.
	fields["SpecAlign"] = gen.Const(c.SpecAlign)
	fields["HostStepUS"] = gen.Const(0)
	fields["KVConnector"] = gen.Const(c.KVConnector)
	fields["Draft"] = gen.Const(c.Draft)
	fields["PrefixMatchUnit"] = gen.Const(c.PrefixMatchUnit)
	if c.Draft != (scenarios.DraftConfig{}) {
		// The drafter's window groups run with prefix caching only,
		// which needs chunked prefill under speculative decoding.
		fields["ChunkedPrefill"] = gen.Const(true)
	}
	if c.MaxHostStepUS > 0 {
		fields["HostStepUS"] = intRange(0, c.MaxHostStepUS)
	}
	if len(c.PatchSets) > 0 {
		fields["Patches"] = patchSets(c.PatchSets)
	}
	if len(c.CUDAGraphModes) > 0 {
		fields["CUDAGraphMode"] = consts(c.CUDAGraphModes)
	}
	if len(c.ModelRunners) > 0 {
		fields["ModelRunner"] = consts(c.ModelRunners)
	}
	if len(c.Async) > 0 {
		a := make([]any, len(c.Async))
		for i, x := range c.Async {
			a[i] = x
		}
		fields["AsyncScheduling"] = choice(a)
	}
	for k, g := range spec {
		fields[k] = g
	}
	return gen.StructPtr(reflect.TypeOf(Params{}), fields)
}

// requests draws lo..hi requests. The shrinker first merges neighbours
// (one request carrying both prompts, up to maxPrompt), then drops runs
// of requests, then shrinks each one; it never goes below lo. Merging
// matters for bug B, where several medium prompts walk the free queue
// as far as one long prompt does: dropping any one of them stops short
// of the wrapping slot, so without it the search would stall there.
func requests(elem gopter.Gen, lo, hi, maxPrompt int) gopter.Gen {
	return func(gp *gopter.GenParameters) *gopter.GenResult {
		n := lo + gp.Rng.Intn(hi-lo+1)
		out := make([]Request, 0, n)
		var shrinker gopter.Shrinker
		var sieve func(any) bool
		for len(out) < n {
			r := elem(gp)
			v, ok := r.Retrieve()
			if !ok {
				continue
			}
			out = append(out, v.(Request))
			shrinker, sieve = r.Shrinker, r.Sieve
		}
		drop := gen.SliceShrinker(shrinker)
		res := gopter.NewGenResult(out, func(v any) gopter.Shrink {
			return gopter.ConcatShrinks(merges(v.([]Request), lo, maxPrompt), drop(v))
		})
		res.Sieve = func(v any) bool {
			rs := v.([]Request)
			if len(rs) < lo {
				return false
			}
			for _, r := range rs {
				if sieve != nil && !sieve(r) {
					return false
				}
			}
			return true
		}
		return res
	}
}

// Sample draws one scenario under c from seed (c must be valid).
func Sample(c Config, seed int64) *Params {
	gp := gopter.DefaultGenParameters()
	gp.Rng = rand.New(rand.NewSource(seed))
	for {
		if v, ok := Gen(c)(gp).Retrieve(); ok {
			return v.(*Params)
		}
	}
}

// mergeSlack is the extra prompt a merge adds: a few blocks' worth of
// tokens for the hybrid presets' raised block sizes.
const mergeSlack = 128

// merges proposes rs with requests i and i+1 made one, for each i.
func merges(rs []Request, lo, maxPrompt int) gopter.Shrink {
	i := 0
	return func() (any, bool) {
		if len(rs)-1 < lo || i >= len(rs)-1 {
			return nil, false
		}
		a, b := rs[i], rs[i+1]
		// The merged prompt also takes a's output and some slack, so the
		// one request still spans as many blocks as the two did (it
		// saves the second's state slots).
		m := append(slices.Clone(rs[:i]), Request{GapUS: a.GapUS, Prompt: min(maxPrompt, a.Prompt+a.Output+b.Prompt+mergeSlack), Output: b.Output})
		m = append(m, rs[i+2:]...)
		i++
		return m, true
	}
}

// choice draws one of xs, and shrinks towards the front of the list:
// configs list the simplest option first (tiny-hybrid, fcfs, chunked
// prefill on), so a counterexample ends on it when it can.
func choice(xs []any) gopter.Gen {
	return func(gp *gopter.GenParameters) *gopter.GenResult {
		i := gp.Rng.Intn(len(xs))
		res := gopter.NewGenResult(xs[i], func(v any) gopter.Shrink {
			var simpler []any
			for _, x := range xs {
				if x == v {
					break
				}
				if !slices.Contains(simpler, x) {
					simpler = append(simpler, x)
				}
			}
			k := 0
			return func() (any, bool) {
				if k == len(simpler) {
					return nil, false
				}
				k++
				return simpler[k-1], true
			}
		})
		res.Sieve = func(v any) bool { return slices.Contains(xs, v) }
		return res
	}
}

// patchSets draws one of sets (as a fresh slice) and shrinks towards the
// front, like choice.
func patchSets(sets [][]string) gopter.Gen {
	idx := make([]any, len(sets))
	for i := range sets {
		idx[i] = i
	}
	pick := choice(idx)
	find := func(v []string) int {
		for i, s := range sets {
			if slices.Equal(s, v) {
				return i
			}
		}
		return -1
	}
	return func(gp *gopter.GenParameters) *gopter.GenResult {
		r := pick(gp)
		i, _ := r.Retrieve()
		res := gopter.NewGenResult(slices.Clone(sets[i.(int)]), func(v any) gopter.Shrink {
			next := r.Shrinker(find(v.([]string)))
			return func() (any, bool) {
				j, ok := next()
				if !ok {
					return nil, false
				}
				return slices.Clone(sets[j.(int)]), true
			}
		})
		res.Sieve = func(v any) bool { return find(v.([]string)) >= 0 }
		return res
	}
}

// intRange draws lo..hi uniformly and shrinks towards lo: first lo
// itself, then halving the distance. gopter's own integer shrinker aims at
// 0, which a range filter then drops, so from 3 in 1..10 it would try 2
// but never 1, and a search could stall one step from the minimum.
func intRange(lo, hi int) gopter.Gen {
	return gen.IntRange(lo, hi).WithShrinker(func(v any) gopter.Shrink {
		x := v.(int)
		d := x - lo
		return func() (any, bool) {
			if d <= 0 {
				return nil, false
			}
			c := x - d
			d /= 2
			return c, true
		}
	})
}
