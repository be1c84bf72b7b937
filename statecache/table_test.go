package statecache

import (
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
