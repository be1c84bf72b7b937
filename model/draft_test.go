package model

import (
	"strings"
	"testing"
)

// A drafter's sliding-window layers start at the kernel block and are
// raised to the unified page: on Qwen3-Next (bf16 KV, 2 KV heads × 256:
// 2048 B a token, block 544, page 1,114,112 B) a drafter with 8 KV heads ×
// 128 (4096 B a token) ends at 1,114,112 / 4096 = 272 tokens, half the
// target's block, so cache_config.block_size after start-up (the smallest
// group block) falls below the Mamba group's 544, while scheduler_block_size
// is their lcm and hash_block_size their gcd. With 4 KV heads (2048 B a
// token) the drafter's block is the target's. On Kimi-Linear (MLA, 1152 B
// a token, page 2,211,840 B) the drafter's 16-token page (65,536 B) does
// not divide the unified page: vLLM's NotImplementedError.
func TestDraftWindowBlock(t *testing.T) {
	q := loadConfig(t, "qwen3-next-80b-a3b.json")
	if l := q.Layout(16); l.BlockSize != 544 || l.PageBytes != 1114112 {
		t.Fatalf("Qwen3-Next: block %d, page %d; the test assumes 544 and 1114112", l.BlockSize, l.PageBytes)
	}
	for _, tc := range []struct {
		heads, layers, block, groupSize int
	}{{8, 1, 272, 1}, {4, 5, 544, 5}} {
		d := DraftWindow{NumLayers: tc.layers, NumKVHeads: tc.heads, HeadDim: 128, SlidingWindow: 2048}
		l, err := q.LayoutWithDraftWindow(16, d)
		if err != nil {
			t.Fatal(err)
		}
		if l.GroupSize != tc.groupSize {
			t.Errorf("%d heads, %d layers: group size %d, want %d (the smallest bucket: 36 Mamba, 12 attention, %d drafter layers)", tc.heads, tc.layers, l.GroupSize, tc.groupSize, tc.layers)
		}
		var win []Group
		for _, g := range l.Groups {
			if g.Kind == SlidingWindow {
				win = append(win, g)
			} else if g.BlockSize != 0 {
				t.Errorf("target group %v carries a block of its own", g)
			}
		}
		if len(win) != 1 || win[0].BlockSize != tc.block || len(win[0].Layers) != tc.layers || win[0].Layers[0] != q.NumLayers {
			t.Errorf("%d heads: sliding-window groups %v, want one of %d layers from %d with block %d", tc.heads, win, tc.layers, q.NumLayers, tc.block)
		}
		specs := q.GroupSpecsWithDraft(&l, l.BlockSize, d)
		if got := CacheBlockSize(specs, l.BlockSize); got != tc.block {
			t.Errorf("%d heads: cache_config.block_size %d, want %d", tc.heads, got, tc.block)
		}
		if got := SchedulerBlockSize(specs, l.BlockSize); got != 544 {
			t.Errorf("%d heads: scheduler_block_size %d, want 544 (the lcm)", tc.heads, got)
		}
		if got := HashBlockSize(specs, l.BlockSize, true, true); got != tc.block {
			t.Errorf("%d heads: hash_block_size %d, want %d (the gcd)", tc.heads, got, tc.block)
		}
		if got := HashBlockSize(specs, l.BlockSize, true, false); got != 544 {
			t.Errorf("%d heads, all mode: hash_block_size %d, want the scheduler block 544", tc.heads, got)
		}
		last := specs[len(specs)-1]
		if !strings.HasPrefix(last.Spec, "SlidingWindowSpec(block_size=") || !strings.Contains(last.Spec, "sliding_window=2048") {
			t.Errorf("the drafter's group spec %q", last.Spec)
		}
	}
	k := loadConfig(t, "kimi-linear-48b-a3b.json")
	_, err := k.LayoutWithDraftWindow(16, DraftWindow{NumLayers: 1, NumKVHeads: 8, HeadDim: 128, SlidingWindow: 2048})
	if err == nil || !strings.Contains(err.Error(), "NotImplementedError") {
		t.Errorf("Kimi-Linear with a GQA sliding-window drafter: %v, want vLLM's NotImplementedError", err)
	}
	if _, err := q.LayoutWithDraftWindow(16, DraftWindow{NumLayers: 1, NumKVHeads: 8, HeadDim: 128}); err == nil {
		t.Error("a drafter with no window was accepted")
	}
}

// One group: the scheduler and hash blocks are the block; no prefix
// caching: the hash block is the scheduler's.
func TestSchedulerAndHashBlockSizeOneGroup(t *testing.T) {
	one := []GroupSpec{{Kind: Attention, BlockSize: 16}}
	if SchedulerBlockSize(one, 16) != 16 || HashBlockSize(one, 16, true, true) != 16 {
		t.Error("one group: the block itself")
	}
	two := []GroupSpec{{Kind: Attention, BlockSize: 48}, {Kind: SlidingWindow, BlockSize: 32}}
	if s, h := SchedulerBlockSize(two, 48), HashBlockSize(two, 48, false, true); s != 96 || h != 96 {
		t.Errorf("48 and 32 without prefix caching: scheduler %d, hash %d; want 96, 96", s, h)
	}
	if h := HashBlockSize(two, 48, true, true); h != 16 {
		t.Errorf("48 and 32 with prefix caching: hash %d, want 16", h)
	}
}

// cache_config.prefix_match_unit (#46384) replaces the gcd where vLLM
// hashes finer than the scheduler block, and is ignored elsewhere
// (resolve_kv_cache_block_sizes, kv_cache_utils.py @ 6adad0876); a unit
// that does not divide a group's block is vLLM's ValueError, in its words.
func TestHashBlockSizeWithPrefixMatchUnit(t *testing.T) {
	hybrid := []GroupSpec{{Kind: Attention, BlockSize: 528}, {Kind: Mamba, BlockSize: 528}}
	for _, tc := range []struct {
		name           string
		groups         []GroupSpec
		hashing, align bool
		unit, want     int
		err            string
	}{
		{"align: the unit", hybrid, true, true, 16, 16, ""},
		{"align: the unit may be the block", hybrid, true, true, 528, 528, ""},
		{"align, unset: the gcd", hybrid, true, true, 0, 528, ""},
		{"align: 5 does not divide 528", hybrid, true, true, 5, 0,
			"Invalid prefix_match_unit=5; all KV cache group block sizes must be divisible by prefix_match_unit. Got group block sizes=[528, 528]."},
		{"align: above the block", hybrid, true, true, 1056, 0, "Got group block sizes=[528, 528]"},
		{"all mode: ignored", hybrid, true, false, 5, 528, ""},
		{"no hashing: ignored", hybrid, false, true, 5, 528, ""},
		{"one group: ignored", hybrid[:1], true, true, 5, 528, ""},
		{"attention groups of 48 and 32: the unit", []GroupSpec{{Kind: Attention, BlockSize: 48}, {Kind: SlidingWindow, BlockSize: 32}}, true, true, 8, 8, ""},
		{"attention groups of 48 and 32: 48 does not divide 32", []GroupSpec{{Kind: Attention, BlockSize: 48}, {Kind: SlidingWindow, BlockSize: 32}}, true, true, 48, 0, "Got group block sizes=[48, 32]."},
	} {
		got, err := HashBlockSizeWith(tc.groups, tc.groups[0].BlockSize, tc.hashing, tc.align, tc.unit)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %d, %v; want the error %q", tc.name, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}
