package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"statesim/model"
	"statesim/scenarios"
	"statesim/setup"
	"statesim/statecache"
)

func init() {
	commands["model"] = command{
		summary: "model CONFIG [--set key.path=value]... [--json]\n      what vLLM would log and decide for a model: KV cache groups, block and page size, blocks, max concurrency, the first 32-bit-wrapping slot\n      (CONFIG: a config.json, a preset name, or a scenario)",
		run:     cmdModel,
	}
}

// modelView is what `statesim model` reports, in vLLM's terms.
type modelView struct {
	Name          string              `json:"name"`
	ModelType     string              `json:"model_type,omitempty"`
	StateKind     model.StateKind     `json:"state_kind,omitempty"`
	Layers        int                 `json:"layers"`
	Attention     int                 `json:"attention_layers"`
	State         int                 `json:"state_layers"`
	NumParameters int64               `json:"num_parameters,omitempty"`
	WeightsGiB    float64             `json:"weights_gib"`
	TP            int                 `json:"tensor_parallel_size"`
	WeightsRank   float64             `json:"weights_gib_per_rank"`
	States        []model.StateTensor `json:"state_tensors"`
	Unify         model.Unification   `json:"unify"`
	Groups        []groupView         `json:"kv_cache_groups"`
	// CacheBlockSize is cache_config.block_size after start-up: the
	// smallest group block size (setup.Setup.CacheBlockSize).
	CacheBlockSize int `json:"cache_config_block_size"`
	// WorkerBlockSize is the model runner's cache_config.block_size
	// (setup.Setup.WorkerBlockSize).
	WorkerBlockSize int `json:"worker_cache_config_block_size"`
	// SchedulerBlockSize and HashBlockSize: scheduler_block_size and
	// hash_block_size (setup.Setup).
	SchedulerBlockSize int `json:"scheduler_block_size"`
	HashBlockSize      int `json:"hash_block_size"`
	// FineGrainedHits: the hybrid coordinator's enable_partial_hash_hits
	// (setup.Setup.FineGrainedHits): a prefix hit may end at any multiple
	// of hash_block_size, inside a Mamba block.
	FineGrainedHits bool `json:"fine_grained_prefix_hits"`
	// MatchUnitUnused says why engine.prefix_match_unit, set, is not
	// used (setup.Setup.MatchUnitWarning).
	MatchUnitUnused string           `json:"prefix_match_unit_unused,omitempty"`
	GroupSize       int              `json:"group_size"`
	BlockBytes      int64            `json:"block_bytes"`
	NumGPUBlocks    int              `json:"num_gpu_blocks"`
	FromOverride    bool             `json:"num_gpu_blocks_from_override"`
	MemoryError     string           `json:"memory_error,omitempty"`
	CacheTokens     int64            `json:"gpu_kv_cache_tokens"`
	MaxModelLen     int              `json:"max_model_len"`
	Concurrency     float64          `json:"max_concurrency"`
	Log             []string         `json:"vllm_log"`
	Stride          int64            `json:"state_stride_elems"`
	Index           model.IndexModel `json:"index_model"`
	Bits            int              `json:"state_index_bits"`
	FirstWrap       int64            `json:"first_wrapping_slot_32bit"`
	WrapReachable   bool             `json:"first_wrap_within_pool"`
	hookLines       int              // leading Log lines from the config hooks
}

// groupView is one KV cache group: its kind, layers, the block size its
// spec carries and the spec (model.GroupSpec).
type groupView struct {
	Kind      string `json:"kind"`
	Layers    []int  `json:"layers"`
	BlockSize int    `json:"block_size"`
	PageBytes int64  `json:"page_bytes"`
	Spec      string `json:"spec"`
}

func cmdModel(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("model", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the layout as JSON")
	var sets setFlags
	fs.Var(&sets, "set", "override a scenario field, e.g. engine.tensor_parallel_size=2 (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "statesim model: want exactly one CONFIG (a config.json, a preset name or a scenario), got %d\n", len(pos))
		return exitBadInput
	}
	st, err := modelSetup(pos[0], sets)
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitBadInput
	}
	v := describeModel(st)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(v)
	} else {
		err = writeModelText(stdout, &v)
	}
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitInternal
	}
	return exitClean
}

// modelSetup settles the scenario a CONFIG stands for: a .json file or
// a built-in config's name is model.hf_config, a preset name
// model.preset, anything else a scenario.
func modelSetup(arg string, sets []string) (*setup.Setup, error) {
	key := ""
	if strings.HasSuffix(arg, ".json") {
		if _, err := os.Stat(arg); err != nil {
			return nil, err
		}
		key = "hf_config"
	} else if _, err := model.Preset(arg); err == nil {
		key = "preset"
	} else if slices.Contains(scenarios.BuiltinModels(), arg) {
		key = "hf_config"
	}
	if key == "" {
		return setup.Load(arg, sets)
	}
	// The workload is a placeholder: the command runs nothing.
	doc, err := yaml.Marshal(map[string]any{"name": "model " + arg, "model": map[string]string{key: arg},
		"workload": map[string]any{"kind": "poisson", "rate": 1, "count": 1}})
	if err != nil {
		return nil, err
	}
	return setup.Parse(doc, arg, sets)
}

func describeModel(st *setup.Setup) modelView {
	sc, sh := st.Scenario, &st.Shape
	l := &st.Layout // the drafter's attention layers included under EAGLE/MTP
	v := modelView{
		Name: sh.Name, ModelType: sh.ModelType, Layers: sh.NumLayers,
		Attention: sh.NumAttentionLayers(), State: sh.NumMambaLayers(),
		NumParameters: sh.NumParameters, WeightsGiB: sh.WeightsGiB, TP: max(1, sh.Cache.TensorParallelSize),
		WeightsRank: sh.WeightsPerRankGiB(), States: sh.StateTensors(), Unify: l.Unify,
		GroupSize: l.GroupSize, BlockBytes: l.BlockBytes(), MaxModelLen: sc.Engine.MaxModelLen,
		Stride: l.StateStrideElems, Bits: int(st.IndexBits), FirstWrap: -1,
		CacheBlockSize:     st.CacheBlockSize,
		WorkerBlockSize:    st.WorkerBlockSize,
		SchedulerBlockSize: st.SchedulerBlockSize, HashBlockSize: st.HashBlockSize,
		FineGrainedHits: st.FineGrainedHits, MatchUnitUnused: st.MatchUnitWarning(),
	}
	if v.State > 0 {
		v.StateKind = sh.StateKind()
		v.Index = sh.IndexModel()
	}
	for _, g := range st.Groups {
		v.Groups = append(v.Groups, groupView{g.Kind.String(), g.Layers, g.BlockSize, g.PageBytes, g.Spec})
	}
	v.Log = append(v.Log, sh.Cache.Rules.Log...) // the config hooks run before the block size is set
	v.hookLines = len(v.Log)
	u := &l.Unify
	if u.Raised {
		v.Log = append(v.Log, fmt.Sprintf("Setting attention block size to %d tokens to ensure that attention page size is >= mamba page size.", u.BlockSize))
	}
	if u.PaddingPct > 0 {
		v.Log = append(v.Log, fmt.Sprintf("Padding mamba page size by %.2f%% to ensure that mamba page size and attention page size are exactly equal.", u.PaddingPct))
	}
	if len(l.Groups) > 0 || st.Pool.FromOverride {
		v.NumGPUBlocks, v.FromOverride = st.Pool.NumBlocks, st.Pool.FromOverride
		if st.Pool.Err != nil {
			v.MemoryError = st.Pool.Err.Error()
		}
	}
	if len(l.Groups) > 0 && v.NumGPUBlocks > 0 {
		// _report_kv_cache_config: tokens = num_blocks // groups × the
		// smallest block size (the Mamba groups' is max_model_len).
		v.CacheTokens = int64(v.NumGPUBlocks/len(l.Groups)) * int64(l.BlockSize)
		v.Log = append(v.Log, fmt.Sprintf("GPU KV cache size: %s tokens", thousands(v.CacheTokens)))
		// get_max_concurrency_for_kv_cache_config: a request holds
		// cdiv(max_model_len, block_size) blocks per attention group and
		// the Mamba spec's max_memory_usage_bytes in pages per Mamba
		// group (its mode's: MambaSpec.MaxBlocksPerRequest).
		spec := statecache.MambaSpec{BlockSize: l.BlockSize, NumSpeculativeBlocks: st.Spec.K}
		if st.Mamba.PrefixCaching {
			spec.Mode = st.Mamba.Mode
		}
		full := int64((sc.Engine.MaxModelLen + l.BlockSize - 1) / l.BlockSize)
		per := int64(l.NumMambaGroups())*int64(spec.MaxBlocksPerRequest(sc.Engine.MaxModelLen)) + int64(l.NumAttnGroups())*full
		v.Concurrency = float64(v.NumGPUBlocks) / float64(per)
		v.Log = append(v.Log, fmt.Sprintf("Maximum concurrency for %s tokens per request: %.2fx", thousands(int64(sc.Engine.MaxModelLen)), v.Concurrency))
	}
	if v.State > 0 && v.Index.Prefill32 {
		ix := statecache.StateIndex{Stride: l.StateStrideElems, Bits: 32}
		v.FirstWrap = ix.FirstWrappingSlot()
		v.WrapReachable = v.FirstWrap >= 0 && v.FirstWrap < int64(v.NumGPUBlocks)
	}
	return v
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && c != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func writeModelText(w io.Writer, v *modelView) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	mt := ""
	if v.ModelType != "" {
		mt = " (" + v.ModelType + ")"
	}
	p("model %s%s: %d layers: %d attention, %d %s state layers", v.Name, mt, v.Layers, v.Attention, v.State, v.StateKind)
	if v.NumParameters > 0 {
		p("weights: %.3f B parameters = %.2f GiB; %.2f GiB per rank at tensor_parallel_size %d", float64(v.NumParameters)/1e9, v.WeightsGiB, v.WeightsRank, v.TP)
	} else {
		p("weights: %.2f GiB (the preset's weights_gib; docs/models.md says which presets are estimates); %.2f GiB per rank at tensor_parallel_size %d", v.WeightsGiB, v.WeightsRank, v.TP)
	}
	if len(v.States) > 0 {
		var parts []string
		for _, t := range v.States {
			parts = append(parts, fmt.Sprintf("%s %v %s %s B", t.Name, t.Dims, t.DType, thousands(t.Bytes())))
		}
		p("state page (one layer, one rank): %s = %s B", strings.Join(parts, " + "), thousands(v.Unify.MambaPage))
	}
	if v.Unify.AttnPage1 > 0 {
		p("attention page: %s B per token per layer", thousands(v.Unify.AttnPage1))
	}
	if v.Unify.Align > 0 {
		p("kernel_block_alignment_size: %d tokens", v.Unify.Align)
	}
	if v.Unify.Chunk > 0 {
		p("mamba_cache_mode all: the block is a multiple of %d tokens, lcm(the Mamba chunk, the alignment)", v.Unify.Chunk)
	}
	for _, ln := range v.Log[:min(len(v.Log), logHead(v))] {
		p("%s", logLine(ln))
	}
	p("block size %d tokens (requested %d), page %s B", v.Unify.BlockSize, v.Unify.Requested, thousands(v.Unify.PageBytes))
	p("KV cache groups, in vLLM's order (group size %d: a block id spans %d tensors, %s B):", v.GroupSize, v.GroupSize, thousands(v.BlockBytes))
	for i, g := range v.Groups {
		p("  group %-2d %-9s block size %-6d layers %s", i, g.Kind, g.BlockSize, joinLayers(g.Layers, v.Layers))
		p("           %s", g.Spec)
	}
	p("cache_config.block_size %d tokens after start-up (the smallest group block size)", v.CacheBlockSize)
	if v.WorkerBlockSize != v.CacheBlockSize {
		p("  the model runner's: %d tokens (worker processes keep the platform's block at tensor_parallel_size > 1)", v.WorkerBlockSize)
	}
	if v.SchedulerBlockSize != v.Unify.BlockSize || v.HashBlockSize != v.Unify.BlockSize {
		p("scheduler_block_size %d tokens (the lcm of the group blocks), hash_block_size %d (the hashes' granularity)", v.SchedulerBlockSize, v.HashBlockSize)
		if v.FineGrainedHits {
			p("  fine-grained prefix-cache hits on (enable_partial_hash_hits): a hit may end at any multiple of %d tokens, inside a Mamba block", v.HashBlockSize)
		} else {
			p("  fine-grained prefix-cache hits off: a hit ends on a multiple of scheduler_block_size")
		}
	}
	if v.MatchUnitUnused != "" {
		p("%s", v.MatchUnitUnused)
	}
	switch {
	case v.FromOverride:
		p("num_gpu_blocks %s (num_gpu_blocks_override)", thousands(int64(v.NumGPUBlocks)))
	case v.MemoryError != "":
		p("num_gpu_blocks: %s", v.MemoryError)
	default:
		p("num_gpu_blocks %s (memory model)", thousands(int64(v.NumGPUBlocks)))
	}
	for _, ln := range v.Log[logHead(v):] {
		p("%s", logLine(ln))
	}
	if v.State > 0 {
		if v.Index.Prefill32 {
			reach := "beyond this pool: unreachable"
			if v.WrapReachable {
				reach = "within this pool: reachable"
			}
			p("bug B: %s; fixed by %s", v.Index.Kernel, v.Index.Fix)
			p("  stride %s elements; first slot whose 32-bit address wraps: ceil(2^32 / stride) = %s (%s)", thousands(v.Stride), thousands(v.FirstWrap), reach)
		} else {
			p("bug B: no 32-bit slot × stride in %s's kernels (%s): %s; no slot wraps", v.StateKind, v.Index.Kernel, v.Index.Note)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// logHead is how many log lines come before the pool size (the block size
// decisions); the rest report the pool.
func logHead(v *modelView) int {
	n := v.hookLines
	if v.Unify.Raised {
		n++
	}
	if v.Unify.PaddingPct > 0 {
		n++
	}
	return min(n, len(v.Log))
}

// logLine is a vLLM log line with its level: INFO unless it says WARNING.
func logLine(ln string) string {
	if strings.HasPrefix(ln, "WARNING ") {
		return ln
	}
	return "INFO " + ln
}

// joinLayers lists a group's layers, marking the drafter's (EAGLE/MTP
// layers registered after the target's num_layers).
func joinLayers(xs []int, numLayers int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
		if x >= numLayers {
			s[i] += " (draft)"
		}
	}
	return strings.Join(s, ", ")
}
