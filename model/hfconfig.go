package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
)

// ConfigError is a problem in a config.json: "FILE:LINE: field F: problem".
// Line is where the field's key first appears (0 when it is absent).
type ConfigError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *ConfigError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Field == "" {
		return loc + ": " + e.Msg
	}
	return fmt.Sprintf("%s: field %s: %s", loc, e.Field, e.Msg)
}

// HFModelTypes lists the model_types FromHFConfig reads, sorted.
func HFModelTypes() []string {
	out := make([]string, 0, len(hfBuilders))
	for k := range hfBuilders {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// hfBuilders derive a shape from a config, by model_type. Each sets the
// layer kinds and their order, the state mixer's widths and the
// parameter count, reading the keys vLLM's model class reads.
var hfBuilders = map[string]func(h *hf, s *Shape){
	"jamba":            jamba,
	"mamba":            mambaOnly,
	"falcon_mamba":     mambaOnly,
	"mamba2":           mamba2Only,
	"nemotron_h":       nemotronH,
	"bamba":            bambaLike,
	"granitemoehybrid": bambaLike,
	"falcon_h1":        falconH1,
	"qwen3_next":       qwen3Next,
	"qwen3_5":          qwen3Next,
	"qwen3_5_text":     qwen3Next,
	"qwen3_5_moe":      qwen3Next,
	"qwen3_5_moe_text": qwen3Next,
	"lfm2":             lfm2,
	"lfm2_moe":         lfm2,
	"minimax_text_01":  minimax,
	"minimax_m1":       minimax,
	"minimax":          minimax,
	"kimi_linear":      kimiLinear,
	"kimi_k3":          kimiLinear, // its text_config is a kimi_linear config
	"zamba2":           zamba2,
	"llama":            attentionOnly,
	"mistral":          attentionOnly,
	"qwen2":            attentionOnly,
	"qwen3":            attentionOnly,
}

// unsupported explains model_types that have state layers statesim does
// not lay out yet.
var unsupported = map[string]string{
	"zamba": "Zamba (v1)'s shared attention block is not modelled (Zamba2 is)",
}

// FromHFConfig derives a shape from a Hugging Face config.json (data),
// named file in errors. A config that nests its language model in
// text_config (Qwen3.5) is read from there, top-level keys filling gaps.
// The cache arguments (TP, dtypes) stay unset: the scenario sets
// Shape.Cache.
func FromHFConfig(data []byte, file string) (Shape, error) {
	h := &hf{data: data, file: file}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var top map[string]any
	if err := dec.Decode(&top); err != nil {
		line := 0
		if se, ok := err.(*json.SyntaxError); ok {
			line = 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		}
		return Shape{}, &ConfigError{File: file, Line: line, Msg: "not a JSON object: " + err.Error()}
	}
	if top == nil {
		return Shape{}, &ConfigError{File: file, Line: 1, Msg: "not a JSON object"}
	}
	if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		// json.Decoder stops after one value: anything after it (a second
		// object, a pasted fragment) would otherwise be ignored.
		off := len(data) - len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"))
		return Shape{}, &ConfigError{File: file, Line: 1 + bytes.Count(data[:off], []byte("\n")), Msg: "text after the JSON object: a config.json is one object"}
	}
	h.m = top
	if tc, ok := top["text_config"].(map[string]any); ok {
		merged := map[string]any{}
		for k, v := range top {
			merged[k] = v
		}
		for k, v := range tc {
			merged[k] = v
		}
		h.m = merged
	}
	mt := h.str("model_type")
	if h.err != nil {
		return Shape{}, h.err
	}
	build, ok := hfBuilders[mt]
	if !ok {
		msg := fmt.Sprintf("unsupported %q (supported: %s)", mt, strings.Join(HFModelTypes(), ", "))
		if why, ok := unsupported[mt]; ok {
			msg = fmt.Sprintf("%q is not supported: %s", mt, why)
		}
		return Shape{}, h.fail("model_type", "%s", msg)
	}
	s := Shape{ModelType: mt, Name: h.name(), Architecture: h.architecture()}
	s.NumLayers = h.int("num_hidden_layers")
	if s.NumLayers > maxLayers {
		h.fail("num_hidden_layers", "%d layers: more than the %d statesim accepts", s.NumLayers, maxLayers)
	}
	s.HiddenSize = h.int("hidden_size")
	s.VocabSize = h.int("vocab_size")
	s.NumAttentionHeads = h.intOr(0, "num_attention_heads")
	s.NumKVHeads = h.intOr(s.NumAttentionHeads, "num_key_value_heads")
	if s.NumAttentionHeads > 0 {
		s.HeadDim = h.intOr(s.HiddenSize/s.NumAttentionHeads, "head_dim")
	}
	// get_mamba_chunk_size: mamba_chunk_size (Bamba, Falcon-H1, Granite),
	// else chunk_size (Mamba2, Nemotron-H); vLLM divides by it.
	for _, k := range []string{"mamba_chunk_size", "chunk_size"} {
		if h.has(k) {
			if s.MambaChunkSize = h.int(k); s.MambaChunkSize == 0 {
				h.fail(k, "must be > 0")
			}
			break
		}
	}
	s.DType = h.strOr("bfloat16", "torch_dtype", "dtype")
	if h.err == nil && DTypeBytes(s.DType) == 0 {
		field := "torch_dtype"
		if !h.has("torch_dtype") {
			field = "dtype"
		}
		h.fail(field, "unknown dtype %q (want bfloat16, float16 or float32)", s.DType)
	}
	if h.err == nil {
		build(h, &s)
	}
	if h.err != nil {
		return Shape{}, h.err
	}
	if err := s.Validate(); err != nil {
		f, msg, _ := strings.Cut(err.Error(), ": ")
		return Shape{}, h.fail(f, "%s", msg)
	}
	s.WeightsGiB = float64(s.NumParameters) * float64(DTypeBytes(s.DType)) / (1 << 30)
	return s, nil
}

// maxLayers bounds num_hidden_layers (real models have at most a few hundred).
const maxLayers = 4096

// hf reads typed fields from a decoded config, keeping the first error.
type hf struct {
	m    map[string]any
	data []byte
	file string
	err  error
}

func (h *hf) line(key string) int {
	i := bytes.Index(h.data, []byte(`"`+key+`"`))
	if i < 0 {
		return 0
	}
	return 1 + bytes.Count(h.data[:i], []byte("\n"))
}

func (h *hf) fail(key, format string, a ...any) error {
	if h.err == nil {
		h.err = &ConfigError{File: h.file, Line: h.line(key), Field: key, Msg: fmt.Sprintf(format, a...)}
	}
	return h.err
}

func (h *hf) has(key string) bool {
	v, ok := h.m[key]
	return ok && v != nil
}

// architecture is the first architectures entry, "" when there is none
// (vLLM requires one; statesim reads it only for the config hooks).
func (h *hf) architecture() string {
	if l, ok := h.m["architectures"].([]any); ok && len(l) > 0 {
		if a, ok := l[0].(string); ok {
			return a
		}
	}
	return ""
}

// ssmDType reads the config's own SSM state dtype under key, when present:
// one of vLLM's MambaDType values (vllm/config/cache.py @ 6adad0876).
func (h *hf) ssmDType(s *Shape, key string) {
	if !h.has(key) {
		return
	}
	d := h.str(key)
	switch d {
	case "float32", "float16", "bfloat16":
		s.ConfigSSMDType, s.ConfigSSMDTypeKey = d, key
	default:
		if h.err == nil {
			h.fail(key, "unknown dtype %q (want float32, float16 or bfloat16)", d)
		}
	}
}

func (h *hf) name() string {
	if n, ok := h.m["_name_or_path"].(string); ok && n != "" {
		return n
	}
	return strings.TrimSuffix(filepath.Base(h.file), ".json")
}

// toInt converts a JSON number to an int: whole, and small enough that
// products of widths stay in range.
func toInt(v any) (int, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || f < 0 || f > 1<<24 {
		return 0, false
	}
	return int(f), true
}

func (h *hf) int(key string) int {
	v, ok := h.m[key]
	if !ok || v == nil {
		h.fail(key, "missing (model_type %v needs it)", h.m["model_type"])
		return 0
	}
	n, ok := toInt(v)
	if !ok {
		h.fail(key, "want a non-negative integer below 2^24, got %s", jsonText(v))
	}
	return n
}

// intOr is the first of keys present, or def when none is.
func (h *hf) intOr(def int, keys ...string) int {
	for _, k := range keys {
		if h.has(k) {
			return h.int(k)
		}
	}
	return def
}

func (h *hf) str(key string) string {
	v, ok := h.m[key]
	if !ok || v == nil {
		h.fail(key, "missing")
		return ""
	}
	s, ok := v.(string)
	if !ok {
		h.fail(key, "want a string, got %s", jsonText(v))
	}
	return s
}

func (h *hf) strOr(def string, keys ...string) string {
	for _, k := range keys {
		if h.has(k) {
			return h.str(k)
		}
	}
	return def
}

func (h *hf) boolOr(def bool, key string) bool {
	if !h.has(key) {
		return def
	}
	b, ok := h.m[key].(bool)
	if !ok {
		h.fail(key, "want true or false, got %s", jsonText(h.m[key]))
	}
	return b
}

func (h *hf) list(key string) []any {
	v, ok := h.m[key]
	if !ok || v == nil {
		h.fail(key, "missing")
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		h.fail(key, "want a list, got %s", jsonText(v))
	}
	return l
}

func (h *hf) ints(key string) []int {
	var out []int
	for _, v := range h.list(key) {
		n, ok := toInt(v)
		if !ok {
			h.fail(key, "want a list of non-negative integers, got %s", jsonText(v))
			return nil
		}
		out = append(out, n)
	}
	return out
}

func (h *hf) strs(key string) []string {
	var out []string
	for _, v := range h.list(key) {
		s, ok := v.(string)
		if !ok {
			h.fail(key, "want a list of strings, got %s", jsonText(v))
			return nil
		}
		out = append(out, s)
	}
	return out
}

// sub is a nested object's reader (Kimi Linear's linear_attn_config).
func (h *hf) sub(key string) *hf {
	v, ok := h.m[key]
	if !ok || v == nil {
		h.fail(key, "missing")
		return &hf{m: map[string]any{}, data: h.data, file: h.file, err: h.err}
	}
	m, ok := v.(map[string]any)
	if !ok {
		h.fail(key, "want an object, got %s", jsonText(v))
		m = map[string]any{}
	}
	return &hf{m: m, data: h.data, file: h.file, err: h.err}
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil || len(b) > 40 {
		return fmt.Sprintf("a %T", v)
	}
	return string(b)
}

// kinds builds CacheLayers from one kind per layer; NoCache layers are
// left out, as vLLM registers no cache for them.
func kinds(per []LayerKind) []CacheLayer {
	out := []CacheLayer{}
	for i, k := range per {
		if k != NoCache {
			out = append(out, CacheLayer{i, k})
		}
	}
	return out
}

// layerList checks a per-layer list's length against num_hidden_layers.
func (h *hf) layerList(key string, n, layers int) bool {
	if h.err == nil && n != layers {
		h.fail(key, "lists %d layers, num_hidden_layers is %d", n, layers)
	}
	return h.err == nil
}

// layerTypes reads layer_types, when the config has one, into per: each
// entry names the layer's state mixer (state) or attention (attn), the
// list format Bamba/Granite, Qwen3-Next and LFM2 share with their own two
// names. It reports whether the list was there (a bad one sets h.err).
func (h *hf) layerTypes(per []LayerKind, state, attn string) bool {
	if !h.has("layer_types") {
		return false
	}
	lt := h.strs("layer_types")
	if !h.layerList("layer_types", len(lt), len(per)) {
		return true
	}
	for i, t := range lt {
		switch t {
		case state:
			per[i] = Mamba
		case attn:
			per[i] = Attention
		default:
			h.fail("layer_types", "layer %d is %q (want %s or %s)", i, t, state, attn)
			return true
		}
	}
	return true
}

// indexSet marks the listed layers (0-based, or 1-based when base is 1).
func (h *hf) indexSet(key string, idx []int, layers, base int) map[int]bool {
	set := map[int]bool{}
	for _, i := range idx {
		if i-base < 0 || i-base >= layers {
			h.fail(key, "layer %d is outside the %d layers", i, layers)
			return set
		}
		set[i-base] = true
	}
	return set
}

func jamba(h *hf, s *Shape) {
	s.AttnLayerPeriod = h.int("attn_layer_period")
	s.AttnLayerOffset = h.int("attn_layer_offset")
	// transformers' JambaConfig takes layer i as attention when
	// i % attn_layer_period == attn_layer_offset (and MoE likewise): a
	// period of 0 is a division by zero there, not an all-Mamba model.
	if h.err == nil && s.AttnLayerPeriod < 1 {
		h.fail("attn_layer_period", "must be >= 1 (layer i is attention when i %% attn_layer_period == attn_layer_offset), got %d", s.AttnLayerPeriod)
	}
	if h.err == nil && h.intOr(1, "expert_layer_period") < 1 {
		h.fail("expert_layer_period", "must be >= 1 (layer i is MoE when i %% expert_layer_period == expert_layer_offset), got %d", h.intOr(1, "expert_layer_period"))
	}
	s.MambaExpand = h.int("mamba_expand")
	s.MambaDState = h.int("mamba_d_state")
	s.MambaDConv = h.int("mamba_d_conv")
	dtRank := (s.HiddenSize + 15) / 16 // "auto"
	if d, ok := h.m["mamba_dt_rank"].(string); !ok || d != "auto" {
		dtRank = h.intOr(dtRank, "mamba_dt_rank")
	}
	if h.err != nil {
		return
	}
	p := newParams(h, s)
	per := make([]LayerKind, s.NumLayers)
	expPeriod, expOffset := h.intOr(1, "expert_layer_period"), h.intOr(0, "expert_layer_offset")
	for i := range per {
		per[i] = s.periodKind(i)
		if per[i] == Attention {
			p.attention()
		} else {
			p.mamba1(s.DInner(), s.MambaDState, s.MambaDConv, dtRank)
		}
		if h.intOr(1, "num_experts") > 1 && expPeriod > 0 && i%expPeriod == expOffset {
			p.moe(h.int("num_experts"), h.int("intermediate_size"), 0)
		} else {
			p.mlp(h.int("intermediate_size"), true)
		}
	}
	p.done("Jamba: Mamba1 mixers (in/x/dt/out projections), attention, MoE every expert_layer_period layers, gated MLPs")
}

func mambaOnly(h *hf, s *Shape) {
	s.Mixer = Mixer{Kind: Mamba1, IntermediateSize: h.int("intermediate_size")}
	s.MambaDState = h.int("state_size")
	s.MambaDConv = h.int("conv_kernel")
	s.MambaExpand = h.intOr(2, "expand")
	s.Mixer.Kind = "" // Mamba1 reads its widths from the mamba_* fields
	s.CacheLayers = kinds(repeat(Mamba, s.NumLayers))
	p := newParams(h, s)
	for i := 0; i < s.NumLayers; i++ {
		p.mamba1(s.DInner(), s.MambaDState, s.MambaDConv, h.intOr((s.HiddenSize+15)/16, "time_step_rank"))
	}
	p.done("Mamba: Mamba1 mixers only")
}

func repeat(k LayerKind, n int) []LayerKind {
	out := make([]LayerKind, n)
	for i := range out {
		out[i] = k
	}
	return out
}

// mamba2Mixer reads Mamba2 widths under one model's key names.
func mamba2Mixer(h *hf, dInner int, heads, headDim, groups, state, conv string) Mixer {
	return Mixer{Kind: Mamba2, IntermediateSize: dInner, NumHeads: h.int(heads), HeadDim: h.int(headDim),
		NGroups: h.int(groups), StateSize: h.int(state), ConvKernel: h.int(conv)}
}

func mamba2Only(h *hf, s *Shape) {
	expand := h.intOr(2, "expand")
	s.Mixer = mamba2Mixer(h, expand*s.HiddenSize, "num_heads", "head_dim", "n_groups", "state_size", "conv_kernel")
	s.MambaDState = s.Mixer.StateSize
	s.NumAttentionHeads, s.NumKVHeads, s.HeadDim = 0, 0, 0
	s.CacheLayers = kinds(repeat(Mamba, s.NumLayers))
	p := newParams(h, s)
	for i := 0; i < s.NumLayers; i++ {
		p.mamba2()
	}
	p.done("Mamba2: Mamba2 mixers only")
}

func nemotronH(h *hf, s *Shape) {
	pat := []rune(h.str("hybrid_override_pattern")) // one character a layer, not one byte
	if !h.layerList("hybrid_override_pattern", len(pat), s.NumLayers) {
		return
	}
	s.Mixer = mamba2Mixer(h, 0, "mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel")
	s.Mixer.IntermediateSize = s.Mixer.NumHeads * s.Mixer.HeadDim
	h.ssmDType(s, "mamba_ssm_cache_dtype") // NemotronHForCausalLMConfig reads it
	s.MambaDState = s.Mixer.StateSize
	s.HeadDim = h.intOr(s.HeadDim, "head_dim", "attention_head_dim")
	per := make([]LayerKind, len(pat))
	p := newParams(h, s)
	for i, c := range pat {
		switch c {
		case 'M':
			per[i] = Mamba
			p.mamba2()
		case '*':
			per[i] = Attention
			p.attention()
		case '-':
			per[i] = NoCache
			p.mlp(h.int("intermediate_size"), false) // squared-ReLU MLP: up and down only
		case 'E':
			per[i] = NoCache
			p.moe(h.int("n_routed_experts"), h.int("moe_intermediate_size"), h.intOr(0, "moe_shared_expert_intermediate_size"))
		default:
			h.fail("hybrid_override_pattern", "layer %d is %q (want M, *, - or E)", i, c)
			return
		}
	}
	s.CacheLayers = kinds(per)
	p.done("Nemotron-H: one mixer per layer from hybrid_override_pattern (M Mamba2, * attention, - MLP, E MoE)")
}

// bambaLike reads Bamba (attn_layer_indices) and Granite-4.0-H
// (layer_types) configs: Mamba2 with d_inner = mamba_expand × hidden_size.
func bambaLike(h *hf, s *Shape) {
	expand := h.int("mamba_expand")
	s.Mixer = mamba2Mixer(h, expand*s.HiddenSize, "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv")
	s.MambaDState = s.Mixer.StateSize
	per := repeat(Mamba, s.NumLayers)
	if !h.layerTypes(per, "mamba", "attention") {
		for i := range h.indexSet("attn_layer_indices", h.ints("attn_layer_indices"), s.NumLayers, 0) {
			per[i] = Attention
		}
	}
	if h.err != nil {
		return
	}
	s.CacheLayers = kinds(per)
	p := newParams(h, s)
	experts := h.intOr(0, "num_local_experts")
	for _, k := range per {
		if k == Attention {
			p.attention()
		} else {
			p.mamba2()
		}
		switch {
		case experts > 0:
			p.moe(experts, h.int("intermediate_size"), h.intOr(0, "shared_intermediate_size"))
		case s.ModelType == "granitemoehybrid": // dense Granite-4.0-H: the shared MLP only
			p.mlp(h.int("shared_intermediate_size"), true)
		default:
			p.mlp(h.int("intermediate_size"), true)
		}
	}
	p.done("Bamba / Granite-4.0-H: Mamba2 or attention per layer, then a gated MLP or MoE with a shared expert")
}

func falconH1(h *hf, s *Shape) {
	dInner := h.intOr(h.intOr(2, "mamba_expand")*s.HiddenSize, "mamba_d_ssm")
	s.Mixer = mamba2Mixer(h, dInner, "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv")
	s.MambaDState = s.Mixer.StateSize
	// Parallel hybrid: every layer runs attention and a Mamba2 mixer side
	// by side; FalconH1ParallelHybrid builds (registers) the attention
	// branch first, so the attention group comes first.
	p := newParams(h, s)
	for i := 0; i < s.NumLayers; i++ {
		s.CacheLayers = append(s.CacheLayers, CacheLayer{i, Attention}, CacheLayer{i, Mamba})
		p.mamba2()
		p.attention()
		p.mlp(h.int("intermediate_size"), true)
	}
	p.done("Falcon-H1: Mamba2 and attention in parallel in every layer, gated MLP")
}

func qwen3Next(h *hf, s *Shape) {
	s.Mixer = Mixer{Kind: GatedDeltaNet, NumKHeads: h.int("linear_num_key_heads"), HeadKDim: h.int("linear_key_head_dim"),
		NumVHeads: h.int("linear_num_value_heads"), HeadVDim: h.int("linear_value_head_dim"), ConvKernel: h.int("linear_conv_kernel_dim")}
	h.ssmDType(s, "mamba_ssm_dtype") // Qwen3.5's; Qwen3_5ForConditionalGenerationConfig reads it
	per := make([]LayerKind, s.NumLayers)
	if !h.layerTypes(per, "linear_attention", "full_attention") {
		iv := h.int("full_attention_interval")
		if iv == 0 {
			h.fail("full_attention_interval", "must be > 0")
			return
		}
		for i := range per {
			per[i] = Mamba
			if (i+1)%iv == 0 {
				per[i] = Attention
			}
		}
	}
	if h.err != nil {
		return
	}
	s.CacheLayers = kinds(per)
	p := newParams(h, s)
	gate := h.boolOr(true, "attn_output_gate")
	experts := h.intOr(0, "num_experts")
	for _, k := range per {
		if k == Attention {
			p.attentionGated(gate)
		} else {
			p.gdn()
		}
		if experts > 0 {
			p.moe(experts, h.int("moe_intermediate_size"), h.intOr(0, "shared_expert_intermediate_size"))
		} else {
			p.mlp(h.int("intermediate_size"), true)
		}
	}
	p.done("Qwen3-Next / Qwen3.5: Gated DeltaNet or gated attention per layer, MoE with a shared expert (or a dense MLP)")
}

func lfm2(h *hf, s *Shape) {
	s.Mixer = Mixer{Kind: ShortConv, IntermediateSize: h.intOr(s.HiddenSize, "conv_dim"), ConvKernel: h.int("conv_L_cache")}
	per := repeat(Mamba, s.NumLayers)
	if !h.layerTypes(per, "conv", "full_attention") {
		for i := range h.indexSet("full_attn_idxs", h.ints("full_attn_idxs"), s.NumLayers, 0) {
			per[i] = Attention
		}
	}
	if h.err != nil {
		return
	}
	s.CacheLayers = kinds(per)
	p := newParams(h, s)
	ff := lfm2FF(h, s.HiddenSize)
	experts := h.intOr(0, "num_experts")
	dense := h.intOr(0, "num_dense_layers")
	for i, k := range per {
		if k == Attention {
			p.attention()
		} else {
			p.shortConv(s.Mixer.IntermediateSize, s.Mixer.ConvKernel)
		}
		if experts > 0 && i >= dense {
			p.moe(experts, h.int("moe_intermediate_size"), 0)
		} else {
			p.mlp(ff, true)
		}
	}
	p.done("LFM2: short convolution or attention per layer, gated MLP (block_ff_dim auto-adjusted as LFM2 does)")
}

// lfm2FF is LFM2's feed-forward width: block_ff_dim, shrunk to 2/3,
// scaled and rounded up to block_multiple_of when block_auto_adjust_ff_dim.
func lfm2FF(h *hf, hidden int) int {
	ff := h.intOr(4*hidden, "block_ff_dim", "intermediate_size")
	if !h.boolOr(false, "block_auto_adjust_ff_dim") {
		return ff
	}
	ff = 2 * ff / 3
	if m, ok := h.m["block_ffn_dim_multiplier"].(json.Number); ok {
		if f, err := m.Float64(); err == nil {
			ff = int(f * float64(ff))
		}
	}
	mult := h.intOr(256, "block_multiple_of")
	if mult > 0 {
		ff = mult * ((ff + mult - 1) / mult)
	}
	return ff
}

func minimax(h *hf, s *Shape) {
	s.Mixer = Mixer{Kind: LinearAttention, NumHeads: s.NumAttentionHeads, HeadDim: s.HeadDim}
	types := h.ints("attn_type_list")
	if !h.layerList("attn_type_list", len(types), s.NumLayers) {
		return
	}
	per := make([]LayerKind, s.NumLayers)
	p := newParams(h, s)
	for i, t := range types {
		switch t {
		case 0: // lightning (linear) attention
			per[i] = Mamba
			p.linearAttention()
		case 1:
			per[i] = Attention
			p.attention()
		default:
			h.fail("attn_type_list", "layer %d is %d (want 0, linear, or 1, softmax attention)", i, t)
			return
		}
		p.moe(h.int("num_local_experts"), h.int("intermediate_size"), 0)
	}
	s.CacheLayers = kinds(per)
	p.done("MiniMax-Text-01 / M1: lightning or softmax attention per layer, MoE")
}

func kimiLinear(h *hf, s *Shape) {
	la := h.sub("linear_attn_config")
	heads, hd := la.int("num_heads"), la.int("head_dim")
	s.Mixer = Mixer{Kind: KDA, NumHeads: heads, HeadDim: hd, NumKHeads: heads, HeadKDim: hd, ConvKernel: la.int("short_conv_kernel_size"),
		FullRankGate: la.boolOr(false, "use_full_rank_gate")}
	kdaL := la.ints("kda_layers")
	fullL := la.ints("full_attn_layers")
	if la.err != nil {
		h.err = la.err
		return
	}
	per := repeat(NoCache, s.NumLayers)
	// Kimi Linear numbers these layers from 1.
	for i := range h.indexSet("kda_layers", kdaL, s.NumLayers, 1) {
		per[i] = Mamba
	}
	for i := range h.indexSet("full_attn_layers", fullL, s.NumLayers, 1) {
		if per[i] == Mamba {
			h.fail("full_attn_layers", "layer %d is also in kda_layers", i+1)
			return
		}
		per[i] = Attention
	}
	for i, k := range per {
		if k == NoCache && h.err == nil {
			h.fail("kda_layers", "layer %d (1-based) is in neither kda_layers nor full_attn_layers", i+1)
		}
	}
	s.KVLoraRank = h.int("kv_lora_rank")
	s.QKRopeHeadDim = h.int("qk_rope_head_dim")
	if h.err != nil {
		return
	}
	s.CacheLayers = kinds(per)
	p := newParams(h, s)
	experts := h.intOr(0, "num_experts")
	dense := h.intOr(0, "first_k_dense_replace")
	shared := h.intOr(0, "num_shared_experts") * h.intOr(0, "moe_intermediate_size")
	// Kimi-K3: a q LoRA, an MLA output gate, and latent MoE (routed experts
	// on routed_expert_hidden_size, with down and up projections around them).
	qLora := h.intOr(0, "q_lora_rank")
	gate := h.boolOr(false, "mla_use_output_gate")
	latent := h.intOr(0, "routed_expert_hidden_size")
	for i, k := range per {
		if k == Attention {
			p.mlaLoRA(h.int("qk_nope_head_dim"), h.int("v_head_dim"), qLora, gate)
		} else {
			p.kdaGated(s.Mixer.FullRankGate)
		}
		if experts > 0 && i >= dense && latent > 0 {
			p.latentMoE(experts, h.int("moe_intermediate_size"), shared, latent)
		} else if experts > 0 && i >= dense {
			p.moe(experts, h.int("moe_intermediate_size"), shared)
		} else {
			p.mlp(h.int("intermediate_size"), true)
		}
	}
	p.done("Kimi Linear / Kimi-K3: KDA or MLA attention per layer, MoE with shared experts after first_k_dense_replace dense layers (Kimi-K3: q LoRA, output gates, latent MoE; AttnRes projections left out)")
}

func attentionOnly(h *hf, s *Shape) {
	s.AttnLayerPeriod, s.AttnLayerOffset = 1, 0
	p := newParams(h, s)
	for i := 0; i < s.NumLayers; i++ {
		p.attention()
		p.mlp(h.int("intermediate_size"), true)
	}
	p.done("decoder-only attention model: attention and a gated MLP per layer")
}

// zamba2: every layer runs a Mamba2 mixer; "hybrid" layers also apply one
// of num_mem_blocks shared transformer blocks, which vLLM gives one
// Attention (one KV cache) per hybrid layer. Zamba2Model builds the shared
// blocks, and so registers those attentions (block by block), before the
// layers' mixers: the attention group comes first.
func zamba2(h *hf, s *Shape) {
	dInner := h.int("mamba_expand") * s.HiddenSize
	heads := h.int("n_mamba_heads")
	if h.err == nil && heads == 0 {
		h.fail("n_mamba_heads", "must be > 0")
		return
	}
	s.Mixer = Mixer{Kind: Mamba2, IntermediateSize: dInner, NumHeads: heads, HeadDim: h.intOr(dInner/heads, "mamba_headdim"),
		NGroups: h.intOr(1, "mamba_ngroups"), StateSize: h.int("mamba_d_state"), ConvKernel: h.int("mamba_d_conv")}
	s.MambaDState = s.Mixer.StateSize
	// The shared attention has no grouped KV heads; its width is 2 × hidden.
	s.NumKVHeads = s.NumAttentionHeads
	if s.NumAttentionHeads > 0 {
		s.HeadDim = h.intOr(2*s.HiddenSize/s.NumAttentionHeads, "attention_head_dim")
	}
	types := h.strs("layers_block_type")
	if !h.layerList("layers_block_type", len(types), s.NumLayers) {
		return
	}
	var hybrid []int
	for i, t := range types {
		switch t {
		case "mamba":
		case "hybrid":
			hybrid = append(hybrid, i)
		default:
			h.fail("layers_block_type", "layer %d is %q (want mamba or hybrid)", i, t)
			return
		}
	}
	mem := h.intOr(1, "num_mem_blocks")
	if mem == 0 {
		h.fail("num_mem_blocks", "must be > 0")
		return
	}
	s.CacheLayers = []CacheLayer{}
	for b := 0; b < mem; b++ {
		for k, layer := range hybrid {
			if k%mem == b {
				s.CacheLayers = append(s.CacheLayers, CacheLayer{layer, Attention})
			}
		}
	}
	for i := range types {
		s.CacheLayers = append(s.CacheLayers, CacheLayer{i, Mamba})
	}
	p := newParams(h, s)
	for i := 0; i < s.NumLayers; i++ {
		p.mamba2()
	}
	ffn := h.intOr(4*s.HiddenSize, "intermediate_size", "ffn_hidden_size")
	for b := 0; b < min(mem, len(hybrid)); b++ {
		q := s.NumAttentionHeads * s.HeadDim
		p.add(2*s.HiddenSize, 3*q) // q, k, v from the concatenated 2 × hidden input
		p.add(q, s.HiddenSize)
		p.mlp(ffn, true)
	}
	for range hybrid {
		p.add(s.HiddenSize, s.HiddenSize) // each hybrid layer's linear
	}
	p.done("Zamba2: Mamba2 in every layer; num_mem_blocks shared transformer blocks counted once, per-layer LoRA adapters left out")
}
