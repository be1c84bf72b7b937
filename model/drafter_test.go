package model

import (
	"reflect"
	"testing"
)

// The drafter's attention layer joins the target's attention bucket, as
// vLLM's grouping buckets layers by spec: tiny-hybrid's 1 attention + 3
// Mamba layers (group size 1, 4 groups) become 2 + 3 (group size 2: one
// attention group holding layer 2 and the draft layer 4, two Mamba groups
// by stride); a block then spans 2 raw tensors. Without a drafter, or on
// an attention-free target, the layout is the shape's own.
func TestLayoutWithDrafter(t *testing.T) {
	s, err := Preset("tiny-hybrid")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.LayoutWithDrafter(16, 0), s.Layout(16); !reflect.DeepEqual(got, want) {
		t.Fatalf("no drafter: %+v, want the shape's layout %+v", got, want)
	}
	plain, l := s.Layout(16), s.LayoutWithDrafter(16, 1)
	if plain.GroupSize != 1 || len(plain.Groups) != 4 {
		t.Fatalf("tiny-hybrid: group size %d, %d groups; the test assumes 1 and 4", plain.GroupSize, len(plain.Groups))
	}
	want := []Group{{Kind: Mamba, Layers: []int{0, 3}}, {Kind: Mamba, Layers: []int{1}}, {Kind: Attention, Layers: []int{2, 4}}}
	if l.GroupSize != 2 || !reflect.DeepEqual(l.Groups, want) {
		t.Errorf("with a draft layer: group size %d, groups %+v; want 2, %+v", l.GroupSize, l.Groups, want)
	}
	if l.BlockBytes() != 2*plain.BlockBytes() || l.BlockSize != plain.BlockSize {
		t.Errorf("block bytes %d (block size %d), want twice %d (block size %d)", l.BlockBytes(), l.BlockSize, plain.BlockBytes(), plain.BlockSize)
	}
	m, err := Preset("mamba-only-3b")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.LayoutWithDrafter(16, 1), m.Layout(16); !reflect.DeepEqual(got, want) {
		t.Errorf("attention-free target: %+v, want its own layout", got)
	}
}
