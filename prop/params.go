package prop

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"statesim/model"
	"statesim/scenarios"
	"statesim/setup"
	"statesim/workload"
)

// Request is one generated request: it arrives GapUS microseconds after
// the previous one (the first arrives at 0), with a prompt of Prompt tokens
// and Output tokens to generate.
type Request struct {
	GapUS  int
	Prompt int
	Output int
	// Shared leading hash blocks (Params.HashBlock tokens each) of prompt
	// Family: requests of one family share them, as a trace's equal
	// leading hash_ids do (0: a prompt of the request's own).
	Family, Shared int
}

// Params is one generated scenario. Fields are plain values so that
// gopter's struct shrinker can shrink each on its own, in field order:
// max_num_seqs first, because running fewer requests at once cuts the
// preemption churn that makes candidate runs slow, then the requests,
// because dropping requests is the shrink that matters most.
type Params struct {
	MaxNumSeqs          int
	Requests            []Request
	MaxNumBatchedTokens int
	// ExtraBlocks is the pool beyond the smallest one that still fits the
	// largest request alone (num_gpu_blocks_override = that + ExtraBlocks),
	// so every generated scenario can finish and shrinking cannot make it
	// infeasible.
	ExtraBlocks               int
	LongPrefillTokenThreshold int
	StateIndexBits            int
	Seed                      uint64
	Preset                    string
	Version                   string
	Policy                    string
	ChunkedPrefill            bool
	Backend                   string
	// CUDAGraphMode and Patches are engine.cudagraph_mode and
	// engine.patches (empty: the defaults); Patches is set by controls,
	// never drawn.
	CUDAGraphMode string
	Patches       []string
	// ModelRunner is engine.model_runner ("": the release's default, V2
	// from v0.29); set by configs and controls, never drawn.
	ModelRunner string
	// Speculative decoding (SpecMethod "": off): K drafts per decode row,
	// and the acceptance model: SpecAccepted >= 0 a fixed count, -1 each
	// draft accepted with probability SpecRatePct / 100.
	SpecMethod   string
	SpecK        int
	SpecAccepted int
	SpecRatePct  int
	// AsyncScheduling is engine.async_scheduling.
	AsyncScheduling bool
	// CacheMode is prefix caching: "" off, "on" with the release's
	// Mamba cache mode, "align" or "all" that mode (hybrids; releases
	// before the modes take their own). Where vLLM would refuse the pair
	// or statesim does not model it (v0, numeric backends, no attention
	// layer, no chunked prefill on a hybrid, speculative decoding on a
	// hybrid) caching stays off. HashBlock is the tokens per shared hash
	// id of the requests' prompts.
	CacheMode string
	HashBlock int
	// SpecAlign lets a hybrid under MTP/EAGLE/ngram keep prefix caching
	// when CacheMode is align (set by Config, never drawn), the pair
	// vLLM runs since #33705: searches made before it keep caching off
	// there and draw what they did.
	SpecAlign bool
	// HostStepUS is timing.host_step_us (0: the default), drawn only by
	// configs that set MaxHostStepUS.
	HostStepUS int
	// KVConnector is engine.kv_transfer_config.kv_connector ("": none;
	// set by Config and controls, never drawn).
	KVConnector string
	// Draft is the DFlash drafter's geometry, written where SpecMethod is
	// dflash (set by Config, never drawn).
	Draft scenarios.DraftConfig
	// PrefixMatchUnit is engine.prefix_match_unit, written where vLLM
	// takes it: a release with #46384, prefix caching in align mode, and
	// a unit that divides every KV cache group's block (elsewhere vLLM
	// ignores it or refuses to start, as caching stays off where it would
	// refuse that); set by Config, never drawn.
	PrefixMatchUnit int
}

// async is engine.async_scheduling as run: vLLM's v0 control has no async
// scheduler and the numeric backends do not model it, so there it stays
// off.
func (p *Params) async() bool {
	return p.AsyncScheduling && p.Version != "v0" && p.Backend == "symbolic"
}

// prefixCaching is whether p runs with prefix caching, and the mode to
// ask for ("" for the release's).
func (p *Params) prefixCaching() (bool, string) {
	if p.CacheMode == "" || p.Version == "v0" || p.Backend != "symbolic" {
		return false, ""
	}
	sh := p.Shape()
	if sh.NumAttentionLayers() == 0 {
		return false, ""
	}
	if sh.NumMambaLayers() == 0 {
		return true, ""
	}
	mode := p.CacheMode
	if mode == "on" || p.Version == "v0.13" || p.Version == "v0.14" {
		mode = "" // before #30877 (v0.15) there is no mode to ask for
	}
	// Speculative decoding runs with a cache mode only in align mode
	// asked for (SpecAlign), which needs a release that can ask.
	if !p.ChunkedPrefill || p.specK() > 0 && !(p.SpecAlign && mode == "align") {
		return false, ""
	}
	return true, mode
}

// specK is K as run (0 when speculative decoding is off).
func (p *Params) specK() int {
	if p.SpecMethod == "" {
		return 0
	}
	return p.SpecK
}

// Shape is the model's shape: Preset names a preset or a model config
// built into the binary (scenarios.BuiltinModels).
func (p *Params) Shape() model.Shape {
	s, err := shapeOf(p.Preset)
	if err != nil {
		panic(err) // models come from Config, which Validate checked
	}
	// The release's dtype and conv-width rules, as the scenario applies
	// them, so the blocks sized here are the ones it runs with.
	setup.ApplyRelease(&s, p.Version, p.specK())
	return s
}

// configShapes memoizes built-in configs' shapes: Shape runs several
// times per candidate, and deriving a config parses its JSON.
var configShapes sync.Map

// shapeOf is a preset's shape, or a built-in config's.
func shapeOf(name string) (model.Shape, error) {
	if s, err := model.Preset(name); err == nil {
		return s, nil
	}
	if s, ok := configShapes.Load(name); ok {
		return s.(model.Shape), nil
	}
	s, err := scenarios.ReadHFConfig(name, "")
	if err != nil {
		return model.Shape{}, fmt.Errorf("model %q is neither a preset nor a built-in config: %w", name, err)
	}
	configShapes.Store(name, s)
	return s, nil
}

// isConfig reports whether Preset names a built-in config.
func (p *Params) isConfig() bool {
	_, err := model.Preset(p.Preset)
	return err != nil
}

// blockSize is the block size every generated scenario asks for; hybrid
// shapes raise it (see model.Layout).
const blockSize = 16

// NumGPUBlocks is the pool the scenario runs with, null block included.
func (p *Params) NumGPUBlocks() int {
	on, _ := p.prefixCaching()
	return p.poolSize(p.specK(), on)
}

// poolSize is the smallest pool that fits the largest request alone
// under K speculative tokens, with or without prefix caching, plus
// ExtraBlocks.
func (p *Params) poolSize(k int, on bool) int {
	sh := p.Shape()
	l := sh.Layout(blockSize)
	var window []model.Group // a DFlash drafter's groups, at their own block
	if p.SpecMethod == "dflash" && k > 0 {
		sh.Cache.NumSpeculativeTokens = k
		if dl, err := sh.LayoutWithDraftWindow(blockSize, p.Draft.Window()); err == nil {
			l = dl
			for _, g := range dl.Groups {
				if g.Kind == model.SlidingWindow {
					window = append(window, g)
				}
			}
		}
	}
	most := 0
	for _, r := range p.Requests {
		// 1 + K state columns per Mamba group, and room for K drafts
		// and K lookahead slots past the request's last token.
		perGroup := 1 + k
		if on {
			// A Mamba cache mode (K = 0): align holds the copy source
			// beside the running block, all a block per block of tokens
			// (either may be the release's choice).
			perGroup = max(2, ceilDiv(r.Prompt+r.Output, l.BlockSize)) + k
		}
		if on && p.PrefixMatchUnit > 0 {
			// Fine-grained hits reserve a block more per group for a
			// copy-on-write (get_num_blocks_to_allocate's
			// int(has_partial_hit)), and a running request's move of a
			// published tail two (1 + int(has_partial_hit)).
			perGroup += 2
		}
		n := l.NumMambaGroups()*perGroup + l.NumAttnGroups()*ceilDiv(r.Prompt+r.Output+2*k, l.BlockSize)
		if on && p.PrefixMatchUnit > 0 {
			n += l.NumAttnGroups()
		}
		for _, g := range window {
			n += ceilDiv(r.Prompt+r.Output+2*k+1, g.BlockSize) // held until freed out of the window: at most all
		}
		most = max(most, n)
	}
	return max(2, 1+most+p.ExtraBlocks)
}

// sizePool sets sc's num_gpu_blocks_override for the speculative tokens
// and prefix caching sc runs with, which --set overrides may have changed
// from what p drew.
func (p *Params) sizePool(sc *scenarios.Scenario) {
	k := 0
	if sc.Engine.Speculative.Method != "" {
		k = sc.Engine.Speculative.NumSpeculativeTokens
	}
	st, err := setup.Resolve(sc)
	on := err == nil && st.Mamba.PrefixCaching
	sc.Engine.NumGPUBlocksOverride = p.poolSize(k, on)
}

// budget is max_num_batched_tokens as run: without chunked prefill (and
// in V0, which schedules whole prompts) vLLM requires the budget to hold
// any whole prompt, and a recomputed one after preemption; a smaller one
// is a configuration vLLM refuses, not a scenario.
func (p *Params) budget() int {
	b := p.MaxNumBatchedTokens
	if !p.ChunkedPrefill || p.Version == "v0" {
		for _, r := range p.Requests {
			b = max(b, r.Prompt+r.Output)
		}
	}
	if on, _ := p.prefixCaching(); on {
		// Align mode needs a block within the budget (#34445).
		sh := p.Shape()
		b = max(b, sh.Layout(blockSize).BlockSize)
	}
	return b
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// maxSteps bounds a generated run; reaching it is a liveness failure.
const maxSteps = 1_000_000

// Scenario builds the scenario; its trace workload reads tracePath,
// which must hold TraceJSONL.
func (p *Params) Scenario(name, tracePath string) (*scenarios.Scenario, error) {
	sc := scenarios.Defaults()
	sc.Name = name
	sc.Description = p.String()
	sc.Seed = p.Seed
	sc.Model.Preset = p.Preset
	if p.isConfig() {
		sc.Model.Preset, sc.Model.HFConfig = "", p.Preset
	}
	sc.Model.Shape = p.Shape()
	e := &sc.Engine
	e.VLLMVersion = p.Version
	e.MaxNumBatchedTokens = p.budget()
	e.MaxNumSeqs = p.MaxNumSeqs
	e.BlockSize = blockSize
	e.NumGPUBlocksOverride = p.NumGPUBlocks()
	e.EnableChunkedPrefill = p.ChunkedPrefill
	e.LongPrefillTokenThreshold = p.LongPrefillTokenThreshold
	e.SchedulingPolicy = p.Policy
	e.StateIndexBits = p.StateIndexBits
	if p.CUDAGraphMode != "" {
		e.CUDAGraphMode = p.CUDAGraphMode
	}
	e.Patches = p.Patches
	if p.Version != "v0" { // the v0 control has no V1 model runner
		e.ModelRunner = p.ModelRunner
		e.KVTransferConfig.KVConnector = p.KVConnector
	}
	if k := p.specK(); k > 0 {
		e.Speculative = scenarios.Speculative{Method: p.SpecMethod, NumSpeculativeTokens: k, Accepted: p.SpecAccepted,
			AcceptanceRate: float64(p.SpecRatePct) / 100}
		if p.SpecMethod == "dflash" {
			e.Speculative.Draft = p.Draft
		}
	}
	e.AsyncScheduling = p.async()
	sc.Timing.HostStepUS = float64(p.HostStepUS)
	pc, mode := p.prefixCaching()
	if pc {
		e.MambaCacheMode = mode
	}
	sc.Workload = workload.Spec{Kind: "trace", Path: tracePath,
		PromptLen: workload.Dist{Kind: "trace"}, OutputLen: workload.Dist{Kind: "trace"}}
	if p.shares() {
		sc.Workload.HashField, sc.Workload.HashBlockTokens = "hash_ids", p.HashBlock
	}
	sc.Backend.Kind = p.Backend
	sc.Checks = scenarios.Checks{Keep: 3, MaxSteps: maxSteps}
	sc.File = name
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("generated scenario %s: %w", name, err)
	}
	// enable_prefix_caching is written only where it differs from the
	// default, as a scenario file would leave it out.
	st, err := setup.Resolve(&sc)
	if err != nil || st.Mamba.PrefixCaching != pc {
		e.EnablePrefixCaching = &pc
		st, err = setup.Resolve(&sc)
		var ie *scenarios.InputError
		if errors.As(err, &ie) && ie.Path == "engine.long_prefill_token_threshold" {
			// Align mode before #50000 refuses a threshold below the
			// block at start-up (#35122): a search draws what vLLM runs,
			// so the threshold is raised to the block.
			bs := sc.Model.Shape.Layout(blockSize).BlockSize
			e.LongPrefillTokenThreshold = bs
			sc.Description += fmt.Sprintf(" (raised to the Mamba block, %d: align)", bs)
			st, err = setup.Resolve(&sc)
		}
		if err != nil {
			return nil, fmt.Errorf("generated scenario %s: %w", name, err)
		}
	}
	m := st.Mamba
	if !m.PrefixCaching {
		return &sc, nil
	}
	if u := p.PrefixMatchUnit; u > 0 && st.Version.Behaviour().PartialHashHits && m.Mode.String() == "align" && dividesGroups(st.Groups, u) {
		e.PrefixMatchUnit = u
		sc.Description += fmt.Sprintf(", prefix_match_unit %d", u)
	}
	// The none/align block (every shape the search draws is unified at
	// blockSize; all mode runs no drafter).
	bs := sc.Model.Shape.Layout(blockSize).BlockSize
	switch m.Mode.String() {
	case "all":
		// All mode rounds the block to the Mamba kernel's chunk (2048
		// tokens on Mamba1): over a few hundred tokens a request would
		// cross no boundary. mamba_block_size, which vLLM takes as the
		// chunk, keeps the block where none and align put it. The bug-B
		// search (an index below 64 bits) keeps vLLM's chunk: its prompts
		// reach 2048 tokens, and the padded page's stride is what makes
		// the 32-bit index wrap sooner with prefix caching on.
		if p.StateIndexBits >= 64 {
			e.MambaBlockSize = bs
		}
	}
	return &sc, nil
}

// dividesGroups reports whether unit divides every group's block, as
// vLLM requires of prefix_match_unit (resolve_kv_cache_block_sizes).
func dividesGroups(groups []model.GroupSpec, unit int) bool {
	for _, g := range groups {
		if g.BlockSize%unit != 0 {
			return false
		}
	}
	return true
}

// TraceJSONL is the requests as a JSON Lines trace, times in seconds
// with microsecond digits (exact in the reader).
func (p *Params) TraceJSONL() []byte {
	var b strings.Builder
	at := 0
	for i, r := range p.Requests {
		if i > 0 {
			at += r.GapUS
		}
		fmt.Fprintf(&b, "{\"timestamp\": %d.%06d, \"input_tokens\": %d, \"output_tokens\": %d", at/1e6, at%1e6, r.Prompt, r.Output)
		if p.shares() {
			// The family's ids first, then the request's own: one id per
			// HashBlock tokens, the last one partial.
			b.WriteString(", \"hash_ids\": [")
			shared := min(r.Shared, r.Prompt/p.HashBlock)
			for k := range ceilDiv(r.Prompt, p.HashBlock) {
				if k > 0 {
					b.WriteString(", ")
				}
				id := 1_000_000*(i+1) + k
				if k < shared {
					id = r.Family*1000 + k
				}
				fmt.Fprintf(&b, "%d", id)
			}
			b.WriteString("]")
		}
		b.WriteString("}\n")
	}
	return []byte(b.String())
}

// shares reports whether any request shares a prefix.
func (p *Params) shares() bool {
	if p.HashBlock <= 0 {
		return false
	}
	for _, r := range p.Requests {
		if r.Shared > 0 && r.Prompt >= p.HashBlock {
			return true
		}
	}
	return false
}

// String summarises the scenario on one line.
func (p *Params) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests [", len(p.Requests))
	for i, r := range p.Requests {
		if i > 0 {
			b.WriteString(", ")
		}
		if i > 0 {
			fmt.Fprintf(&b, "+%dus ", r.GapUS)
		}
		fmt.Fprintf(&b, "%d→%d", r.Prompt, r.Output)
	}
	fmt.Fprintf(&b, "], %s, vLLM %s, %s, max_num_batched_tokens %d, max_num_seqs %d, %d blocks, %d-bit index",
		p.Preset, p.Version, p.Policy, p.budget(), p.MaxNumSeqs, p.NumGPUBlocks(), p.StateIndexBits)
	if !p.ChunkedPrefill {
		b.WriteString(", no chunked prefill")
	}
	if p.LongPrefillTokenThreshold > 0 {
		fmt.Fprintf(&b, ", long_prefill_token_threshold %d", p.LongPrefillTokenThreshold)
	}
	if p.Backend != "symbolic" {
		fmt.Fprintf(&b, ", backend %s", p.Backend)
	}
	if p.CUDAGraphMode != "" && p.CUDAGraphMode != "none" {
		fmt.Fprintf(&b, ", cudagraph_mode %s", p.CUDAGraphMode)
	}
	if p.async() {
		b.WriteString(", async scheduling")
		if p.HostStepUS > 0 {
			fmt.Fprintf(&b, " (host step %d us)", p.HostStepUS)
		}
	}
	if len(p.Patches) > 0 {
		fmt.Fprintf(&b, ", patches %v", p.Patches)
	}
	if p.KVConnector != "" && p.Version != "v0" {
		fmt.Fprintf(&b, ", kv_connector %s", p.KVConnector)
	}
	if p.ModelRunner != "" {
		fmt.Fprintf(&b, ", model runner %s", p.ModelRunner)
	}
	if on, mode := p.prefixCaching(); on {
		if mode == "" {
			mode = "the release's mode"
		}
		fmt.Fprintf(&b, ", prefix caching (%s)", mode)
	}
	if p.shares() {
		fmt.Fprintf(&b, ", shared prefixes of %d-token ids [", p.HashBlock)
		for i, r := range p.Requests {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%d×%d", r.Family, min(r.Shared, r.Prompt/p.HashBlock))
		}
		b.WriteString("]")
	}
	if k := p.specK(); k > 0 {
		fmt.Fprintf(&b, ", %s K=%d ", p.SpecMethod, k)
		if p.SpecAccepted >= 0 {
			fmt.Fprintf(&b, "accepting %d", p.SpecAccepted)
		} else {
			fmt.Fprintf(&b, "acceptance %d%%", p.SpecRatePct)
		}
	}
	return b.String()
}
