package statecache

import (
	"slices"
	"testing"

	"statesim/model"
)

func TestFreeQueueOrder(t *testing.T) {
	p := NewBlockPoolWith(6, PoolOptions{}) // blocks 1..5; 0 is the null block
	if got := p.FreeQueue(); !slices.Equal(got, []int32{1, 2, 3, 4, 5}) {
		t.Fatalf("initial free queue %v", got)
	}
	a, _ := p.Pop(10)
	b, _ := p.Pop(10)
	c, _ := p.Pop(11)
	if a != 1 || b != 2 || c != 3 {
		t.Fatalf("pops %d %d %d, want 1 2 3 (from the head)", a, b, c)
	}
	// A freed table returns reversed to the tail.
	if err := p.Push(10, b); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(10, a); err != nil {
		t.Fatal(err)
	}
	if got := p.FreeQueue(); !slices.Equal(got, []int32{4, 5, 2, 1}) {
		t.Fatalf("free queue %v, want [4 5 2 1]", got)
	}
	if err := p.Push(10, c); err == nil {
		t.Error("freeing a block held by another request must fail")
	}
	if err := p.Push(11, 0); err == nil {
		t.Error("freeing the null block must fail")
	}
	if p.NumHeld() != 1 || p.Holder(3) != 11 {
		t.Errorf("held %d holder(3) %d", p.NumHeld(), p.Holder(3))
	}
}

func TestManagerAllocatesEveryGroupAndFreesReversed(t *testing.T) {
	sh, _ := model.Preset("tiny-hybrid") // 1 attention + 3 Mamba groups
	l := sh.Layout(16)
	if l.NumAttnGroups() != 1 || l.NumMambaGroups() != 3 {
		t.Fatalf("groups %+v", l.Groups)
	}
	m := NewKVCacheManager(&l, 20)
	tb := m.NewTable()
	if need := m.BlocksNeeded(&tb, 2*l.BlockSize+1); need != 3+3 {
		t.Fatalf("blocks needed %d, want 3 KV + 3 slots", need)
	}
	ok, err := m.Allocate(7, &tb, 2*l.BlockSize+1)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	// vLLM's group order: the Mamba groups (layers 0, 1, 3; layer 0 is
	// Mamba, so its kind comes first), then attention (layer 2).
	if !slices.Equal(tb.Mamba, []int32{1, 2, 3}) || !slices.Equal(tb.Attn[0], []int32{4, 5, 6}) {
		t.Errorf("slots %v KV %v", tb.Mamba, tb.Attn[0])
	}
	// All-or-nothing: asking for more than the pool has changes nothing.
	other := m.NewTable()
	if ok, _ := m.Allocate(8, &other, 1000*l.BlockSize); ok || other.NumHeld() != 0 || m.Pool.NumFree() != 13 {
		t.Errorf("oversized allocation: ok %v held %d free %d", ok, other.NumHeld(), m.Pool.NumFree())
	}
	if err := m.Free(7, &tb); err != nil {
		t.Fatal(err)
	}
	q := m.Pool.FreeQueue()
	if !slices.Equal(q[len(q)-6:], []int32{1, 2, 3, 6, 5, 4}) {
		t.Errorf("tail of free queue %v, want groups in order, KV reversed", q[len(q)-6:])
	}
}

func TestStateIndexWraps(t *testing.T) {
	ix := StateIndex{Stride: 90112, Bits: 32, Elems: 81920, Offset: 7680}
	first := ix.FirstWrappingSlot()
	if first != 47663 { // ceil(2^32 / 90112)
		t.Fatalf("first wrapping slot %d", first)
	}
	if _, _, w := ix.Span(int32(first - 1)); w {
		t.Error("slot below the threshold must not wrap")
	}
	f, l, w := ix.Span(int32(first))
	want := (uint64(first)*90112 - 1<<32 + 7680) / 90112
	if !w || int64(f) != int64(want) || l < f || l > f+1 {
		t.Errorf("span of %d: %d..%d wrapped %v, want first %d", first, f, l, w, want)
	}
	ix.Bits = 64
	if _, _, w := ix.Span(int32(first)); w || ix.FirstWrappingSlot() != -1 {
		t.Error("64-bit index must not wrap")
	}
}

func TestMemoryModel(t *testing.T) {
	m := Memory{DeviceGiB: 10, GPUMemoryUtilization: 0.5, WeightsGiB: 1, ActivationGiB: 1}
	n, err := m.NumGPUBlocks(1 << 20)
	if err != nil || n != 3*1024 {
		t.Fatalf("blocks %d err %v, want 3072", n, err)
	}
	m.GPUMemoryUtilization = 0.1
	if _, err := m.NumGPUBlocks(1 << 20); err == nil {
		t.Error("negative memory must be an error")
	}
}

func TestProvenanceJudgesReads(t *testing.T) {
	ps := NewProvenances(4)
	if !ps.StateValid(1, 5, 0) {
		t.Error("a zeroed slot is a valid initial state")
	}
	ps.WriteState(1, 5, 10, 3, false)
	if !ps.StateValid(1, 5, 10) || ps.StateValid(1, 5, 9) || ps.StateValid(1, 6, 0) {
		t.Error("state validity must match writer and absorbed tokens")
	}
	ps.Clobber(1, 3, 9, 4, 4)
	if ps.StateValid(1, 5, 10) {
		t.Error("a clobbered slot is stale for its owner")
	}
	ps.WriteKV(2, 5, 0, 7, 1)
	if !ps.KVValid(2, 5, 7) || ps.KVValid(2, 5, 8) || ps.KVValid(2, 6, 1) {
		t.Error("KV validity")
	}
	// A clobber of a partly filled block, then its owner writing on from
	// mid-block: the earlier positions are damaged until reported.
	ps.Clobber(2, 3, 9, 4, 2)
	ps.WriteKV(2, 5, 7, 9, 3)
	if ps.KVValid(2, 5, 9) {
		t.Error("positions before a mid-block write onto clobbered bytes must read stale")
	}
	ps.AdoptKV(2, 5, 9, 3)
	if !ps.KVValid(2, 5, 9) {
		t.Error("after the stale read is reported the damage is carried, not re-reported")
	}
}
