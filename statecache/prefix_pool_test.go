package statecache

import (
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Without prefix caching every freed block is fresh: FreshToHead is LIFO
// reuse (vLLM since #51482, and #42656 until #48017), FreeToTail is FIFO.
func TestFreeOrderWithoutPrefixCaching(t *testing.T) {
	for _, c := range []struct {
		order FreeOrder
		want  []int32
	}{
		{FreeToTail, []int32{4, 5, 3, 2, 1}},
		{FreshToHead, []int32{3, 2, 1, 4, 5}},
	} {
		p := NewBlockPoolWith(6, PoolOptions{FreeOrder: c.order})
		for range 3 {
			p.Pop(7)
		}
		// A request frees its blocks tail first.
		if err := p.FreeBlocks(7, []int32{3, 2, 1}); err != nil {
			t.Fatal(err)
		}
		eq(t, c.order.String(), p.FreeQueue(), c.want)
		b, _ := p.Pop(8)
		eq(t, c.order.String()+": next block", b, c.want[0])
	}
}

// FreeBlocks is all or nothing: one block that is not the caller's undoes
// the release of the others.
func TestFreeBlocksAllOrNothing(t *testing.T) {
	for _, pc := range []bool{false, true} {
		p := NewBlockPoolWith(6, PoolOptions{EnablePrefixCaching: pc})
		a, _ := p.Pop(1)
		b, _ := p.Pop(1)
		before := p.FreeQueue()
		bad := int32(5) // free, held by no one
		if err := p.FreeBlocks(1, []int32{b, a, bad}); err == nil {
			t.Fatalf("prefix caching %v: freeing a free block succeeded", pc)
		}
		if !slices.Equal(p.FreeQueue(), before) || p.Holder(a) != 1 || p.Holder(b) != 1 || p.NumHeld() != 2 {
			t.Errorf("prefix caching %v: a failed free changed the pool: queue %v, holders %d %d", pc, p.FreeQueue(), p.Holder(a), p.Holder(b))
		}
		if pc && (p.RefCount(a) != 1 || p.RefCount(b) != 1) {
			t.Errorf("refs %d %d after a failed free", p.RefCount(a), p.RefCount(b))
		}
		if err := p.FreeBlocks(1, []int32{b, NullBlock, a}); err != nil {
			t.Fatalf("null blocks are skipped: %v", err)
		}
		eq(t, "all free", p.NumFree(), 5)
	}
}

// A block shared by two requests returns to the queue only when both have
// freed it, and Pop evicts a cached block's hash.
func TestSharedBlockAndEvictionOnPop(t *testing.T) {
	p := NewBlockPoolWith(3, PoolOptions{EnablePrefixCaching: true})
	p.NewStepStarts(4)
	blk := make([]int32, 1)
	p.GetNewBlocks(1, 0, blk)
	h := AppendBlockHashes(nil, span(0, 16), 16)
	p.NewStepStarts(5)
	if err := p.CacheFullBlocks(1, 0, blk, h, 0, 1, 16); err != nil {
		t.Fatal(err)
	}
	want := PrefixRecord{Hash: h[0], Writer: 1, Step: 5, Group: 0, Tokens: 16, Cached: true}
	if r := p.Record(blk[0]); r != want {
		t.Fatalf("record %+v, want %+v", r, want)
	}
	p.Touch(2, blk)
	eq(t, "refs", p.RefCount(blk[0]), 2)
	p.FreeBlocks(1, blk)
	eq(t, "free with one holder left", p.NumFree(), 1)
	p.FreeBlocks(2, blk)
	eq(t, "free", p.NumFree(), 2)
	// Touching a free cached block takes it out of the middle of the queue.
	p.Touch(3, blk)
	eq(t, "queue after a hit on a free block", p.FreeQueue(), []int32{2})
	eq(t, "holder", p.Holder(blk[0]), RequestID(3))
	p.Push(3, blk[0])
	got, _ := p.Pop(4) // 2, never cached
	got, _ = p.Pop(4)
	if got != blk[0] || p.Record(got).Cached || p.NumCachedBlocks() != 0 || p.Stats().Evictions != 1 {
		t.Errorf("popped %d: %+v, %d cached, %d evictions", got, p.Record(got), p.NumCachedBlocks(), p.Stats().Evictions)
	}
	if p.GetCachedBlock(h, 0, []int32{0}, blk) {
		t.Error("an evicted hash still hits")
	}
}

// Serves names both sides of a mismatch.
func TestPrefixRecordServes(t *testing.T) {
	r := PrefixRecord{Hash: 0xabc, Writer: 7, Step: 3, Group: 1, Tokens: 32, Cached: true}
	if err := r.Serves(1, 0xabc, 32); err != nil {
		t.Fatal(err)
	}
	err := r.Serves(1, 0xdef, 32)
	if err == nil || !strings.Contains(err.Error(), "0xabc") || !strings.Contains(err.Error(), "0xdef") || !strings.Contains(err.Error(), "request 7") {
		t.Errorf("mismatch message %v", err)
	}
	if err := r.Serves(0, 0xabc, 32); err == nil {
		t.Error("a block of another group served")
	}
}

// The hash chain: equal prefixes agree, any earlier difference or a
// different content id does not, and a partial block has no hash.
func TestBlockHashChain(t *testing.T) {
	a := AppendBlockHashes(nil, span(0, 40), 16)
	b := AppendBlockHashes(nil, cat(span(0, 32), rep(9, 5)), 16)
	c := AppendBlockHashes(nil, cat([]int32{1}, span(1, 32)), 16)
	if len(a) != 2 || !slices.Equal(a, b) {
		t.Errorf("same 32-token prefix: %v vs %v", a, b)
	}
	if c[1] == a[1] || c[0] == a[0] {
		t.Error("a different first token left a hash unchanged")
	}
	if HashBlockContent(NoneHash, 1) == HashBlockContent(NoneHash, 2) || HashBlockContent(a[0], 1) == HashBlockContent(NoneHash, 1) {
		t.Error("content ids or parents collide")
	}
	// Extending keeps the earlier hashes.
	if ext := AppendBlockHashes(slices.Clone(a[:1]), span(0, 40), 16); !slices.Equal(ext, a) {
		t.Errorf("extended %v, want %v", ext, a)
	}
}

// TestPrefixCachingHostBytes: the allocation prefix caching adds is what
// PrefixCachingHostBytes says, so a memory estimate can count it.
func TestPrefixCachingHostBytes(t *testing.T) {
	for _, n := range []int{1 << 20, 3 << 19} { // a power of two, and one that rounds the table up
		for _, groups := range []int{1, 8} {
			measure := func(o PoolOptions) float64 {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				p := NewBlockPoolWith(n, o)
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(p)
				return float64(after.TotalAlloc - before.TotalAlloc)
			}
			extra := measure(PoolOptions{EnablePrefixCaching: true, Groups: groups}) - measure(PoolOptions{Groups: groups})
			want := float64(PrefixCachingHostBytes(n))
			t.Logf("%d blocks, %d groups: %.1f bytes per block with prefix caching", n, groups, extra/float64(n))
			if extra < 0.95*want || extra > 1.05*want {
				t.Errorf("%d blocks, %d groups: prefix caching allocates %.0f bytes, PrefixCachingHostBytes says %.0f", n, groups, extra, want)
			}
		}
	}
}

// TestBlockTableGroupsShareLine: one hash's keys in groups 0..7 have
// distinct homes on one eight-slot line (a cache line of the table), and
// its keys in any groups distinct tags (so a probe reads no other
// group's record), at every table size.
func TestBlockTableGroupsShareLine(t *testing.T) {
	for _, n := range []int{1, 2, 5, 100, 1 << 16, 87505} {
		tab := newBlockTable(n, 8, nil)
		for i := range 200 {
			h := BlockHash(mix(uint64(i) + 1))
			homes := map[uint64]bool{}
			tags := map[uint32]bool{}
			for g := range int32(1 << 9) {
				tg := tab.tag(BlockKey{Hash: h, Group: g})
				if tags[tg] {
					t.Fatalf("table of %d slots: hash %#x, group %d: tag %#x repeats", len(tab.slots), h, g, tg)
				}
				tags[tg] = true
				if g >= 8 {
					continue
				}
				home := tab.home(tg)
				if len(tab.slots) >= 8 && (homes[home] || home/8 != tab.home(tab.tag(BlockKey{Hash: h}))/8) {
					t.Fatalf("table of %d slots: hash %#x, group %d: home %d, not its own slot on group 0's line", len(tab.slots), h, g, home)
				}
				homes[home] = true
			}
		}
	}
}

// TestBlockTableRunsShareLine: on a single group's table of eight lines
// or more, the runLen positions of a run have their homes on one line,
// each at its offset, whatever the hashes past the run's first; equal keys
// have equal tags. Smaller tables and tables of several groups home each
// key by its own hash.
func TestBlockTableRunsShareLine(t *testing.T) {
	for _, c := range []struct{ blocks, groups int }{{8, 1}, {87505, 1}, {1 << 16, 0}, {7, 1}, {1 << 16, 2}} {
		tab := newBlockTable(c.blocks, c.groups, nil)
		if want := c.groups <= 1 && len(tab.slots) >= 8*runLen; tab.runs != want {
			t.Fatalf("%d blocks, %d groups: runs %v, want %v", c.blocks, c.groups, tab.runs, want)
		}
		for i := range 200 {
			hashes := make([]BlockHash, 3*runLen)
			for j := range hashes {
				hashes[j] = BlockHash(mix(uint64(i*len(hashes)+j) + 1))
			}
			for j := range hashes {
				k := keyAt(hashes, j, 0)
				if again := keyAt(slices.Clone(hashes), j, 0); tab.tag(again) != tab.tag(k) {
					t.Fatalf("%d blocks: position %d: equal keys, tags %#x and %#x", c.blocks, j, tab.tag(k), tab.tag(again))
				}
				if !tab.runs {
					if tab.tag(k) != tab.tag(BlockKey{Hash: k.Hash}) {
						t.Fatalf("%d blocks, %d groups: position %d's tag depends on its run", c.blocks, c.groups, j)
					}
					continue
				}
				first := tab.home(tab.tag(keyAt(hashes, j&^(runLen-1), 0)))
				if home := tab.home(tab.tag(k)); first%runLen != 0 || home != first+uint64(j%runLen) {
					t.Fatalf("%d blocks: position %d homed at %d, its run's first at %d", c.blocks, j, home, first)
				}
			}
		}
	}
}

// TestPublishListsPrivateTail: blocks cached out of the table (a private
// tail) miss until their writer publishes them, then hit where a listed
// block would, on a table of runs (whose homes the records must keep) and
// on a plain one.
func TestPublishListsPrivateTail(t *testing.T) {
	for _, n := range []int{64, 7} {
		p := NewBlockPoolWith(n, PoolOptions{EnablePrefixCaching: true})
		blk := make([]int32, n-1)
		if err := p.GetNewBlocks(1, 0, blk); err != nil {
			t.Fatal(err)
		}
		h := AppendBlockHashes(nil, span(0, 16*len(blk)), 16)
		listed := len(blk) / 3
		if err := p.cacheFullBlocksListed(1, 0, blk, h, 0, len(blk), 16, listed); err != nil {
			t.Fatal(err)
		}
		found := func() (hits int) {
			got := make([]int32, 1)
			for i := range blk {
				if p.GetCachedBlock(h, i, []int32{0}, got) {
					if got[0] != blk[i] {
						t.Fatalf("%d blocks: hash %d finds block %d, cached in %d", n, i, got[0], blk[i])
					}
					hits++
				}
			}
			return hits
		}
		eq(t, "hits before publishing", found(), listed)
		p.pc.publish(1, blk)
		eq(t, "hits after publishing", found(), len(blk))
	}
}
