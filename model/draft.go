package model

import (
	"fmt"
	"strconv"
	"strings"
)

// DraftWindow is a drafter's sliding-window attention layers as its config
// gives them: a DFlash drafter whose layers are all sliding-window
// (`layer_types`, or `dflash_config.use_swa` with `swa_window_size`;
// vllm/model_executor/models/qwen3_dflash.py @ 6adad0876). Their KV heads
// and head size are the drafter's own, not the target's.
type DraftWindow struct {
	NumLayers     int
	NumKVHeads    int
	HeadDim       int
	SlidingWindow int
	// KernelBlock is the drafter backend's smallest kernel block, the
	// block Attention.get_kv_cache_spec starts a sliding-window spec at
	// (_largest_kernel_block_within with no padded page,
	// vllm/model_executor/layers/attention/attention.py @ 6adad0876,
	// since #42890); 0: 16, FlashAttention's MultipleOf(16).
	KernelBlock int
}

func (d DraftWindow) kernelBlock() int {
	if d.KernelBlock > 0 {
		return d.KernelBlock
	}
	return 16
}

// page1 is one token's page of a drafter layer (K and V, per rank, in the
// target's KV cache dtype).
func (s *Shape) draftPage1(d DraftWindow) int64 {
	heads := max(1, d.NumKVHeads/max(1, s.Cache.TensorParallelSize))
	return int64(2 * heads * d.HeadDim * DTypeBytes(s.KVDType()))
}

// DraftWindowBlock is the block the drafter's sliding-window spec ends
// with once unify_kv_cache_spec_page_size has raised its page to the
// common page (vllm/v1/core/kv_cache_utils.py @ 6adad0876): the kernel
// block times the ratio of the pages. A page that does not divide the
// common one is vLLM's NotImplementedError (only backends that index KV
// by the block stride pad; FlashAttention does not), and a page larger
// than the common one would make the drafter's the page every other
// group is raised to, which is not modelled.
func (s *Shape) DraftWindowBlock(l *Layout, d DraftWindow) (int, error) {
	if d.NumLayers <= 0 || d.NumKVHeads <= 0 || d.HeadDim <= 0 || d.SlidingWindow <= 0 {
		return 0, fmt.Errorf("drafter sliding-window layers need num_layers, num_kv_heads, head_dim and sliding_window > 0, got %+v", d)
	}
	page := int64(d.kernelBlock()) * s.draftPage1(d)
	switch {
	case page > l.PageBytes:
		return 0, fmt.Errorf("the drafter's sliding-window page (%d B at its %d-token kernel block) is larger than the unified page (%d B): the drafter would set the page every group is raised to, which statesim does not model", page, d.kernelBlock(), l.PageBytes)
	case l.PageBytes%page != 0:
		return 0, fmt.Errorf("the unified page (%d B) is not a multiple of the drafter's sliding-window page (%d B): vLLM raises NotImplementedError at start-up (unify_kv_cache_spec_page_size: \"page size is not divisible by the maximum page size and cannot be padded\")", l.PageBytes, page)
	}
	return d.kernelBlock() * int(l.PageBytes/page), nil
}

// LayoutWithDraftWindow is the layout with the drafter's sliding-window
// layers registered after the target's: their spec differs from every
// target spec, so they form a bucket of their own and so their own KV
// cache groups (get_kv_cache_groups, kv_cache_utils.py @ 6adad0876), each
// with the block DraftWindowBlock gives. They count in the group size like
// any bucket, so they can change the bytes a block costs.
func (s *Shape) LayoutWithDraftWindow(blockSize int, d DraftWindow) (Layout, error) {
	if s.NumAttentionLayers() == 0 {
		return Layout{}, fmt.Errorf("a drafter's sliding-window layers on an attention-free target are not modelled")
	}
	extra := make([]CacheLayer, d.NumLayers)
	for i := range extra {
		extra[i] = CacheLayer{Layer: s.NumLayers + i, Kind: SlidingWindow}
	}
	l := s.layoutWith(blockSize, extra)
	bs, err := s.DraftWindowBlock(&l, d)
	if err != nil {
		return Layout{}, err
	}
	for i := range l.Groups {
		if l.Groups[i].Kind == SlidingWindow {
			l.Groups[i].BlockSize = bs
		}
	}
	return l, nil
}

// windowSpec is SlidingWindowSpec for the drafter's layers.
func (s *Shape) windowSpec(blockSize int, d DraftWindow) string {
	return fmt.Sprintf("SlidingWindowSpec(block_size=%d, num_kv_heads=%d, head_size=%d, dtype=%s, sliding_window=%d)",
		blockSize, max(1, d.NumKVHeads/max(1, s.Cache.TensorParallelSize)), d.HeadDim, s.KVDType(), d.SlidingWindow)
}

// SchedulerBlockSize is scheduler_block_size: the lcm of the groups'
// block sizes with more than one group, else blockSize
// (resolve_kv_cache_block_sizes, kv_cache_utils.py @ 6adad0876; decode
// context parallelism, which scales attention groups, is not modelled).
func SchedulerBlockSize(groups []GroupSpec, blockSize int) int {
	if len(groups) <= 1 {
		return blockSize
	}
	m := 1
	for _, g := range groups {
		m = m / gcd(m, g.BlockSize) * g.BlockSize
	}
	return m
}

// HashBlockSize is hash_block_size, the granularity of a request's block
// hashes (resolve_kv_cache_block_sizes, kv_cache_utils.py @ 6adad0876):
// where FinerHashing holds (prefixCaching standing for block hashing),
// the gcd of the groups' block sizes; else the scheduler block.
// HashBlockSizeWith adds cache_config.prefix_match_unit.
func HashBlockSize(groups []GroupSpec, blockSize int, prefixCaching, mambaAlign bool) int {
	h, _ := HashBlockSizeWith(groups, blockSize, prefixCaching, mambaAlign, 0)
	return h
}

// FinerHashing reports whether resolve_kv_cache_block_sizes
// (kv_cache_utils.py @ 6adad0876) may hash finer than the scheduler
// block: more than one KV cache group, block hashing on (hashing: prefix
// caching or a KV connector) and every Mamba group in align mode;
// otherwise why not.
func FinerHashing(groups []GroupSpec, hashing, mambaAlign bool) (bool, string) {
	switch {
	case len(groups) <= 1:
		return false, "the model has one KV cache group"
	case !hashing:
		return false, "block hashing is off (no prefix caching, no KV connector)"
	}
	for _, g := range groups {
		if g.Kind == Mamba && !mambaAlign {
			return false, "the Mamba groups are not in mamba_cache_mode align"
		}
	}
	return true, ""
}

// HashBlockSizeWith is hash_block_size with cache_config.prefix_match_unit
// unit (#46384; 0: unset): where FinerHashing holds, unit if set, else
// the gcd of the groups' block sizes; else the scheduler block, unit
// ignored. A unit that does not divide every group's block is vLLM's
// ValueError, whose text the error carries.
func HashBlockSizeWith(groups []GroupSpec, blockSize int, hashing, mambaAlign bool, unit int) (int, error) {
	if ok, _ := FinerHashing(groups, hashing, mambaAlign); !ok {
		return SchedulerBlockSize(groups, blockSize), nil
	}
	h := unit
	if h <= 0 {
		h = 0
		for _, g := range groups {
			h = gcd(h, g.BlockSize)
		}
		if h <= 0 { // no group has a block: nothing finer to hash at
			return SchedulerBlockSize(groups, blockSize), nil
		}
	}
	sizes := make([]string, len(groups))
	bad := false
	for i, g := range groups {
		sizes[i] = strconv.Itoa(g.BlockSize)
		bad = bad || g.BlockSize%h != 0
	}
	if bad {
		return 0, fmt.Errorf("Invalid prefix_match_unit=%d; all KV cache group block sizes must be divisible by prefix_match_unit. Got group block sizes=[%s].", h, strings.Join(sizes, ", "))
	}
	return h, nil
}
