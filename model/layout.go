package model

import "fmt"

// Group is one KV cache group: layers of one kind that share block tables.
// Each raw cache tensor is shared by one layer of every group.
type Group struct {
	Kind   LayerKind `json:"kind"`
	Layers []int     `json:"layers"`
	// BlockSize is the group's own block in tokens where it differs from
	// the layout's (a drafter's sliding-window group), else 0.
	BlockSize int `json:"block_size,omitempty"`
}

func (g Group) String() string {
	if g.BlockSize > 0 {
		return fmt.Sprintf("{%v %v block %d}", g.Kind, g.Layers, g.BlockSize)
	}
	return fmt.Sprintf("{%v %v}", g.Kind, g.Layers)
}

// Layout is the cache layout vLLM derives for a shape and a requested block
// size (vllm/v1/core/kv_cache_utils.py and the hybrid block-size update).
type Layout struct {
	// BlockSize is the attention block size in tokens after the hybrid
	// adjustment (raised until an attention page holds a Mamba page).
	BlockSize int `json:"block_size"`
	// PageBytes is the unified page size every group's block occupies in
	// one raw tensor.
	PageBytes int64 `json:"page_bytes"`
	// GroupSize is the number of layers per group, which is also the
	// number of raw tensors a block spans.
	GroupSize int     `json:"group_size"`
	Groups    []Group `json:"groups"`
	// StateStrideElems is the distance, in elements of the indexed state,
	// between consecutive slots of one layer's state view: the stride the
	// prefill kernel multiplies the cache index by.
	StateStrideElems int64 `json:"state_stride_elems"`
	// Unify is how the block size and page were reached.
	Unify Unification `json:"unify"`
}

// NumAttnGroups and NumMambaGroups count groups by kind.
func (l *Layout) NumAttnGroups() int  { return l.count(Attention) }
func (l *Layout) NumMambaGroups() int { return l.count(Mamba) }

func (l *Layout) count(k LayerKind) int {
	n := 0
	for _, g := range l.Groups {
		if g.Kind == k {
			n++
		}
	}
	return n
}

// BlockBytes is the device memory one block id costs across raw tensors.
func (l *Layout) BlockBytes() int64 { return l.PageBytes * int64(l.GroupSize) }

// groupSizeSlack is the ratio under which vLLM takes the largest per-kind
// layer count as the group size instead of the smallest, to pad less:
// 1.25 from #29303 (71df2a57e, merged 2025-11-24), 1.5 since #36684
// (891c60dcd, merged 2026-03-12: v0.19 here), kv_cache_utils.py @
// 6adad0876 (ReleaseRules.GroupSlack125). No configuration in
// scenarios/models falls between the two.
func (s *Shape) groupSizeSlack() float64 {
	if s.Cache.Rules.GroupSlack125 {
		return 1.25
	}
	return 1.5
}

// Layout computes the cache layout for a requested attention block size.
//
// Groups follow _get_kv_cache_groups_uniform_page_size: layers are
// bucketed by spec in kv_cache_spec order, so the kind of the first cache
// layer comes first (Jamba: Mamba, since layer 0 is a Mamba layer); the
// group size is the smallest bucket (the largest when within
// groupSizeSlack); a bucket of n layers makes cdiv(n, size) groups and
// group i takes its layers [i::num_groups], a stride, not a run.
func (s *Shape) Layout(blockSize int) Layout { return s.LayoutWithDrafter(blockSize, 0) }

// LayoutWithDrafter is Layout with draft attention layers registered after
// the target's, as an EAGLE or MTP drafter's layers are: vLLM's
// kv_cache_spec holds every attention layer of the static forward context,
// the drafter's included, and _get_kv_cache_groups_uniform_page_size
// buckets layers by spec, so a draft layer whose spec equals the target's
// attention spec joins that bucket (kv_cache_utils.py @ 001cabc1: "gpt-oss-20b
// + eagle, with 12 sw + 13 full"; kv_cache_planning.py's
// _annotate_eagle_groups: "a drafter whose spec is indistinguishable from
// the target's" is found in no group of its own). It does not get a KV
// cache group; it can change the group size, so the bytes a block costs
// and, when the ratio moves, how many groups a bucket makes. Only a
// target with attention layers takes them (an attention-free target would
// need its page unified with the drafter's: not modelled).
func (s *Shape) LayoutWithDrafter(blockSize, draftLayers int) Layout {
	var extra []CacheLayer
	if draftLayers > 0 && s.NumAttentionLayers() > 0 {
		for i := 0; i < draftLayers; i++ {
			extra = append(extra, CacheLayer{Layer: s.NumLayers + i, Kind: Attention})
		}
	}
	return s.layoutWith(blockSize, extra)
}

// layoutWith is the layout of the shape's cache layers followed by extra
// (a drafter's, registered after the target's).
func (s *Shape) layoutWith(blockSize int, extra []CacheLayer) Layout {
	u := s.Unify(blockSize)
	l := Layout{BlockSize: u.BlockSize, PageBytes: u.PageBytes, Unify: u}

	entries := s.Entries()
	if len(extra) > 0 {
		entries = append(append([]CacheLayer(nil), entries...), extra...)
	}
	var kinds []LayerKind
	buckets := map[LayerKind][]int{}
	for _, e := range entries {
		if e.Kind == NoCache {
			continue
		}
		if _, seen := buckets[e.Kind]; !seen {
			kinds = append(kinds, e.Kind)
		}
		buckets[e.Kind] = append(buckets[e.Kind], e.Layer)
	}
	if len(kinds) == 0 {
		return l
	}
	minN, maxN := len(buckets[kinds[0]]), 0
	for _, k := range kinds {
		minN, maxN = min(minN, len(buckets[k])), max(maxN, len(buckets[k]))
	}
	gs := minN
	if float64(maxN) < s.groupSizeSlack()*float64(minN) {
		gs = maxN
	}
	l.GroupSize = gs
	for _, k := range kinds {
		layers := buckets[k]
		n := (len(layers) + gs - 1) / gs
		for i := 0; i < n; i++ {
			var g []int
			for j := i; j < len(layers); j += n {
				g = append(g, layers[j])
			}
			l.Groups = append(l.Groups, Group{Kind: k, Layers: g})
		}
	}
	if t, _, ok := s.IndexedState(); ok {
		l.StateStrideElems = l.PageBytes / int64(DTypeBytes(t.DType))
	}
	return l
}
