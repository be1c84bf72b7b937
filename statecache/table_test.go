package statecache

import (
	"math/rand/v2"
	"testing"

	"statesim/model"
)

// The table's remembered coverage and block count must agree with its
// blocks at every point, so the allocator's and the conservation check's
// shortcuts answer as the full counts would.
func TestTableCountsFollowItsBlocks(t *testing.T) {
	sh, _ := model.Preset("tiny-hybrid") // 1 attention + 3 Mamba groups
	l := sh.Layout(16)
	bs := l.BlockSize
	m := NewKVCacheManager(&l, 40)
	tb := m.NewTable()
	for _, tokens := range []int{1, bs, bs + 1, 3 * bs, 3*bs - 5, 5*bs + 2} {
		if ok, err := m.Allocate(7, &tb, tokens); !ok || err != nil {
			t.Fatalf("allocate %d: %v %v", tokens, ok, err)
		}
		if got, want := tb.NumHeld(), tb.countHeld(); got != want {
			t.Errorf("after %d tokens: NumHeld %d, blocks %d", tokens, got, want)
		}
		if tb.Covered() < tokens || tb.Covered() > len(tb.Attn[0])*bs {
			t.Errorf("after %d tokens: covered %d with %d blocks of %d", tokens, tb.Covered(), len(tb.Attn[0]), bs)
		}
		if n := m.BlocksNeeded(&tb, tokens); n != 0 {
			t.Errorf("after allocating %d tokens, %d more blocks needed", tokens, n)
		}
	}
	if held := m.Pool.NumHeld(); held != tb.NumHeld() {
		t.Errorf("pool holds %d, table %d", held, tb.NumHeld())
	}
	if err := m.Free(7, &tb); err != nil {
		t.Fatal(err)
	}
	if tb.NumHeld() != 0 || tb.Covered() != 0 || m.Pool.NumHeld() != 0 {
		t.Errorf("after free: table %d blocks, covers %d, pool holds %d", tb.NumHeld(), tb.Covered(), m.Pool.NumHeld())
	}
	// A table filled by hand, then grown by the allocator, counts both.
	hand := m.NewTable()
	b, _ := m.Pool.Pop(8)
	hand.Attn[0] = append(hand.Attn[0], b)
	if ok, err := m.Allocate(8, &hand, 2*bs); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if got, want := hand.NumHeld(), hand.countHeld(); got != want || got != 2+3 {
		t.Errorf("hand-filled table: NumHeld %d, blocks %d, want 5", got, want)
	}
}

// The KV cache manager remembers where the skipped-block walk last left
// nothing to free (skipMemo: the block span and the table's shape) so
// that a decode within a block skips the walk. Whatever the schedule
// (chunked prefills, decodes, prefix hits, tables freed and reused), in
// all mode and in align mode every Mamba group must hold no block before
// the one holding the last skipped token once AllocateSlots has freed
// them (remove_skipped_blocks: in align mode that includes the copy
// source once a step has copied from it), as the walk on every call
// would leave it.
func TestSkippedBlocksFreedEveryCall(t *testing.T) {
	for _, mode := range []MambaCacheMode{MambaAll, MambaAlign} {
		t.Run(mode.String(), func(t *testing.T) { skippedBlocksFreedEveryCall(t, mode) })
	}
}

func skippedBlocksFreedEveryCall(t *testing.T, mode MambaCacheMode) {
	sh, _ := model.Preset("tiny-hybrid") // 1 attention + 3 Mamba groups
	l := sh.Layout(16)
	bs := l.BlockSize
	m, err := NewKVCacheManagerWith(&l, 400, ManagerOptions{EnablePrefixCaching: true, MambaCacheMode: mode})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	tables := []BlockTable{m.NewTable(), m.NewTable()}
	step, walks := int64(1), 0
	for req := RequestID(1); req <= 60; req++ {
		tb := &tables[rng.IntN(len(tables))] // reused after Free
		n := 2*bs + rng.IntN(4*bs)
		hashes := tokenHashes(n+bs, bs, int32(rng.IntN(3))) // three prefixes: hits
		m.Pool.NewStepStarts(step)
		step++
		c := 0
		hit := m.GetComputedBlocks(tb, hashes, n, false)
		for c < n+bs {
			q := 1
			if c < n {
				q = min(n-c-hit, 1+rng.IntN(2*bs))
			}
			if ok, err := m.AllocateSlots(req, tb, c, hit, c+hit+q, c+hit+q, hashes); !ok || err != nil {
				t.Fatalf("request %d at %d: %v %v", req, c, ok, err)
			}
			c += hit
			hit = 0
			if top := (c - 1) / bs; c > 1 {
				for g := range tb.MambaT {
					for i, b := range tb.MambaT[g].Blocks[:min(top, len(tb.MambaT[g].Blocks))] {
						if b != NullBlock {
							t.Fatalf("request %d, %d computed: Mamba group %d holds block %d at position %d, below the walk's top %d", req, c, g, b, i, top)
						}
					}
				}
				walks++
			}
			c += q
			m.Pool.NewStepStarts(step)
			step++
		}
		if err := m.Free(req, tb); err != nil {
			t.Fatal(err)
		}
	}
	if walks < 1000 || m.Pool.Stats().Hits == 0 {
		t.Fatalf("%d checks, %d hit tokens: the schedule is too thin", walks, m.Pool.Stats().Hits)
	}
}
