package statecache

import (
	"testing"

	"statesim/model"
)

// leaseFixture is a tiny-hybrid manager (1 attention + 3 Mamba groups)
// with request 1's table allocated for two blocks; bs is the block size.
func leaseFixture(t *testing.T) (m *KVCacheManager, ps *Provenances, tb *BlockTable, bs int) {
	t.Helper()
	sh, _ := model.Preset("tiny-hybrid")
	l := sh.Layout(16)
	m = NewKVCacheManager(&l, 64)
	table := m.NewTable()
	if ok, err := m.Allocate(1, &table, 2*l.BlockSize); !ok || err != nil {
		t.Fatalf("allocate: %v %v", ok, err)
	}
	return m, NewProvenances(64), &table, l.BlockSize
}

// freeBlock is a block m's pool holds for no one.
func freeBlock(t *testing.T, m *KVCacheManager) int32 {
	t.Helper()
	for b := int32(1); b < int32(m.Pool.NumBlocks()); b++ {
		if m.Pool.Holder(b) == NoRequest {
			return b
		}
	}
	t.Fatal("no free block")
	return 0
}

// A copy from a partly filled KV block leased to its writer's table reads
// the lease, not the record the lease left behind, and the writer goes on
// without a false stale read.
func TestCopyBlockLeasedKVSource(t *testing.T) {
	m, ps, tb, bs := leaseFixture(t)
	if bi := ps.AccessKV(tb, 0, 1, 0, bs+4, bs, 3); bi != -1 {
		t.Fatalf("prefill reads stale from %d", bi)
	}
	if bi := ps.AccessKV(tb, 0, 1, bs+4, bs+5, bs, 4); bi != -1 { // through the lease
		t.Fatalf("decode reads stale from %d", bi)
	}
	src := tb.Attn[0][1]
	if !ps.at(src).leased || ps.at(src).Tokens != 4 {
		t.Fatalf("block %d should be leased with a stale record of 4 positions: %+v", src, *ps.at(src))
	}
	dst := freeBlock(t, m)
	ps.CopyBlock(src, dst, 5)
	want := Provenance{Writer: 1, Content: KV, Tokens: 5, Step: 5, Intended: dst}
	if got := ps.Get(dst); got != want {
		t.Fatalf("copy holds %+v, want %+v", got, want)
	}
	if got := ps.Get(src); got.Tokens != 5 || got.Step != 4 || got.Writer != 1 {
		t.Fatalf("source after the copy: %+v", got)
	}
	if bi := ps.AccessKV(tb, 0, 1, bs+5, bs+6, bs, 6); bi != -1 {
		t.Fatalf("writer's next decode reads stale from %d", bi)
	}
}

// A copy from a Mamba slot whose state is leased (LeaseState, advanced
// by AdvanceState) copies the advanced state.
func TestCopyBlockLeasedStateSource(t *testing.T) {
	m, ps, tb, _ := leaseFixture(t)
	for _, b := range tb.Mamba {
		ps.WriteState(b, 1, 10, 2, false)
	}
	ps.LeaseState(tb, 1, 10, 2, false)
	if _, ok := ps.AdvanceState(tb, 1, 10, 11, 3); !ok {
		t.Fatal("the lease should advance")
	}
	dst := freeBlock(t, m)
	ps.CopyBlock(tb.Mamba[1], dst, 4)
	want := Provenance{Writer: 1, Content: State, Tokens: 11, Step: 4, Intended: dst}
	if got := ps.Get(dst); got != want {
		t.Fatalf("copy holds %+v, want %+v", got, want)
	}
	if !ps.StateValid(tb.Mamba[0], 1, 11) {
		t.Fatalf("the source table's slots lost their state: %+v", ps.Get(tb.Mamba[0]))
	}
}

// A copy onto a block a table holds leased breaks the lease: the table's
// shortcut no longer answers for the bytes the copy replaced.
func TestCopyBlockOntoLeasedBlock(t *testing.T) {
	_, ps, tb, _ := leaseFixture(t)
	for _, b := range tb.Mamba {
		ps.WriteState(b, 1, 10, 2, false)
	}
	ps.LeaseState(tb, 1, 10, 2, false)
	src := tb.Attn[0][0]
	ps.WriteKV(src, 7, 0, 16, 3)
	ps.CopyBlock(src, tb.Mamba[2], 4)
	if _, ok := ps.AdvanceState(tb, 1, 10, 11, 5); ok {
		t.Fatal("the lease still answers for a slot the copy overwrote")
	}
	if got := ps.Get(tb.Mamba[2]); got.Content != KV || got.Writer != 7 || got.Step != 4 {
		t.Fatalf("overwritten slot holds %+v", got)
	}
	if !ps.StateValid(tb.Mamba[0], 1, 10) {
		t.Fatalf("the other slots lost the settled state: %+v", ps.Get(tb.Mamba[0]))
	}
}

// Copied bytes keep what they are: clobbered bytes still name the slot
// the wrapped write was meant for, zeros stay zeros.
func TestPutCopyOfClobberKeepsIntended(t *testing.T) {
	ps := NewProvenances(8)
	ps.Clobber(2, 5, 9, 3, 1)
	ps.CopyBlock(2, 4, 2)
	if got := ps.Get(4); !got.Clobber || got.Intended != 5 || got.Step != 2 {
		t.Fatalf("copy of clobbered bytes: %+v", got)
	}
	ps.CopyBlock(1, 4, 3) // a never-written block: zeros
	if got := ps.Get(4); got.Content != Zero || got.Writer != NoRequest || got.Step != 3 {
		t.Fatalf("copy of zeros: %+v", got)
	}
}
