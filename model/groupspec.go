package model

import (
	"fmt"
	"strings"
)

// GroupSpec is one KV cache group as vLLM's KVCacheGroupSpec holds it:
// the layers and the one spec they share (vllm/v1/kv_cache_interface.py @
// 6adad0876), with the block size that spec carries.
type GroupSpec struct {
	Kind   LayerKind `json:"-"`
	Layers []int     `json:"layers"`
	// BlockSize is the spec's block_size in tokens: the attention block
	// for attention groups; for Mamba groups cache_config.mamba_block_size
	// (Layout's caller decides it: max_model_len without prefix caching,
	// the attention block in modes align and all).
	BlockSize int `json:"block_size"`
	// PageBytes is the spec's page_size_bytes in one raw tensor (the
	// Mamba page padded to the attention page).
	PageBytes int64 `json:"page_bytes"`
	// Spec names the spec class and the fields that size it.
	Spec string `json:"spec"`
}

// GroupSpecs lists l's groups with their specs, in vLLM's order.
// mambaBlockSize is cache_config.mamba_block_size as resolved for the
// scenario's cache mode.
func (s *Shape) GroupSpecs(l *Layout, mambaBlockSize int) []GroupSpec {
	return s.GroupSpecsWithDraft(l, mambaBlockSize, DraftWindow{})
}

// GroupSpecsWithDraft is GroupSpecs for a layout with a drafter's
// sliding-window groups (LayoutWithDraftWindow), d their layers.
func (s *Shape) GroupSpecsWithDraft(l *Layout, mambaBlockSize int, d DraftWindow) []GroupSpec {
	out := make([]GroupSpec, 0, len(l.Groups))
	for _, g := range l.Groups {
		gs := GroupSpec{Kind: g.Kind, Layers: g.Layers, BlockSize: l.BlockSize, PageBytes: l.PageBytes}
		switch g.Kind {
		case Attention:
			gs.Spec = s.attentionSpec(l.BlockSize)
		case Mamba:
			gs.BlockSize = mambaBlockSize
			gs.Spec = s.mambaSpec(mambaBlockSize, l.PageBytes)
		case SlidingWindow:
			gs.BlockSize = g.BlockSize
			gs.Spec = s.windowSpec(g.BlockSize, d)
		}
		out = append(out, gs)
	}
	return out
}

// attentionSpec is FullAttentionSpec or, for MLA, MLAAttentionSpec (one
// latent of kv_lora_rank + qk_rope_head_dim per token, one "head").
func (s *Shape) attentionSpec(blockSize int) string {
	if s.MLA() {
		return fmt.Sprintf("MLAAttentionSpec(block_size=%d, num_kv_heads=1, head_size=%d, dtype=%s)", blockSize, s.KVLoraRank+s.QKRopeHeadDim, s.KVDType())
	}
	return fmt.Sprintf("FullAttentionSpec(block_size=%d, num_kv_heads=%d, head_size=%d, dtype=%s)", blockSize, s.KVHeadsPerRank(), s.HeadDim, s.KVDType())
}

// mambaSpec is MambaSpec: the state tensors' shapes and dtypes, the page
// padded to the attention page when they differ, and the speculative
// blocks (num_speculative_tokens).
func (s *Shape) mambaSpec(blockSize int, page int64) string {
	var shapes, dtypes []string
	for _, t := range s.StateTensors() {
		d := make([]string, len(t.Dims))
		for i, x := range t.Dims {
			d[i] = fmt.Sprint(x)
		}
		shapes = append(shapes, "("+strings.Join(d, ", ")+")")
		dtypes = append(dtypes, t.DType)
	}
	padded := ""
	if page != s.MambaPageBytes() {
		padded = fmt.Sprintf(", page_size_padded=%d", page)
	}
	spec := ""
	if k := s.Cache.NumSpeculativeTokens; k > 0 {
		spec = fmt.Sprintf(", num_speculative_blocks=%d", k)
	}
	return fmt.Sprintf("MambaSpec(block_size=%d, shapes=(%s), dtypes=(%s)%s%s)", blockSize, strings.Join(shapes, ", "), strings.Join(dtypes, ", "), padded, spec)
}

// CacheBlockSize is cache_config.block_size as EngineCore.
// _initialize_kv_caches leaves it once the workers have sized their
// caches: the smallest block size over the scheduler's KV cache groups
// (vllm/v1/engine/core.py @ 6adad0876, line 320, since #35122), or
// blockSize, the one the platform settled, when there are no groups.
// It is what V2's add_request and the align-mode chunking divide by, so
// it differs from a Mamba group's block exactly when another group's
// block is smaller.
func CacheBlockSize(groups []GroupSpec, blockSize int) int {
	if len(groups) == 0 {
		return blockSize
	}
	m := groups[0].BlockSize
	for _, g := range groups[1:] {
		m = min(m, g.BlockSize)
	}
	return m
}
