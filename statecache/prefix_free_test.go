package statecache

import (
	"fmt"
	"slices"
	"testing"
)

// freeBlocksTwoPass is prefixCache.freeBlocks as two passes only: every
// reference dropped (all or nothing), then each block left unheld queued
// at its first listing. The one-pass prefix must not change a thing.
func freeBlocksTwoPass(c *prefixCache, q *FreeBlockQueue, order FreeOrder, req RequestID, blocks []int32, tailFirst bool) (int, error) {
	list := slices.Clone(blocks)
	if tailFirst {
		slices.Reverse(list)
	}
	shared := 0
	for k, b := range list {
		if b == NullBlock {
			continue
		}
		if uint(b) >= uint(len(c.st)) || c.st[b].ref == 0 {
			for _, u := range list[:k] {
				if u != NullBlock {
					c.st[u].ref++
				}
			}
			return 0, fmt.Errorf("block %d", b)
		}
		if c.st[b].ref > 1 {
			shared++
		}
		c.st[b].ref--
	}
	var fresh []int32
	queued := map[int32]bool{}
	for _, b := range list {
		if b == NullBlock || c.st[b].ref != 0 || queued[b] {
			continue
		}
		queued[b] = true
		if order == FreshToHead && !c.st[b].cached {
			fresh = append(fresh, b)
		} else {
			q.Append(b)
		}
	}
	q.PrependN(fresh)
	return shared, nil
}

// TestFreeBlocksMatchesTwoPasses frees random lists (blocks held alone
// and shared, listed twice, free, invalid, null; cached and fresh) from
// one pool state with freeBlocks and with the two passes, in both free
// orders and both directions: the same error or none, the same shared
// count, queue, references and holders.
func TestFreeBlocksMatchesTwoPasses(t *testing.T) {
	x := uint64(5)
	rnd := func(n int) int { x = mix(x + 0x9e3779b97f4a7c15); return int(x % uint64(n)) }
	var errs, sharedSeen, fast, single int
	for trial := range 4000 {
		order := []FreeOrder{FreeToTail, FreshToHead}[trial%2]
		tailFirst := trial%4 >= 2
		// Two pools built alike: blocks taken by three requests, some
		// shared by a second, some cached.
		const n = 24
		build := func() *BlockPool {
			p := NewBlockPoolWith(n, PoolOptions{EnablePrefixCaching: true, FreeOrder: order})
			y := x
			r := func(k int) int { y = mix(y + 0x9e3779b97f4a7c15); return int(y % uint64(k)) }
			var held []int32
			for range 12 + r(8) {
				b, err := p.Pop(RequestID(1 + r(3)))
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, b)
			}
			for _, b := range held {
				if r(3) == 0 {
					p.Touch(RequestID(4), []int32{b})
				}
				if r(2) == 0 {
					h := []BlockHash{BlockHash(1 + r(1<<20))}
					if err := p.CacheFullBlocks(1, 0, []int32{b}, h, 0, 1, 16); err != nil {
						t.Fatal(err)
					}
				}
			}
			return p
		}
		a, b := build(), build()
		list := make([]int32, 1+rnd(10))
		for i := range list {
			switch rnd(12) {
			case 0:
				list[i] = NullBlock
			case 1:
				list[i] = int32(n + rnd(3)) // invalid
			default:
				list[i] = int32(1 + rnd(n-1)) // held, shared or free
			}
		}
		if rnd(3) == 0 && len(list) > 1 {
			list[rnd(len(list))] = list[rnd(len(list))] // listed twice
		}
		s1, e1 := a.pc.freeBlocks(&a.q, order, 1, list, tailFirst)
		s2, e2 := freeBlocksTwoPass(b.pc, &b.q, order, 1, list, tailFirst)
		what := fmt.Sprintf("trial %d (%v, tail first %v) freeing %v", trial, order, tailFirst, list)
		if (e1 == nil) != (e2 == nil) || s1 != s2 {
			t.Fatalf("%s: error %v shared %d, two passes: %v %d", what, e1, s1, e2, s2)
		}
		if !slices.Equal(a.FreeQueue(), b.FreeQueue()) {
			t.Fatalf("%s: queue %v, two passes %v", what, a.FreeQueue(), b.FreeQueue())
		}
		for blk := int32(1); blk < n; blk++ {
			if a.RefCount(blk) != b.RefCount(blk) || a.Holder(blk) != b.Holder(blk) {
				t.Fatalf("%s: block %d ref %d holder %d, two passes %d %d", what, blk, a.RefCount(blk), a.Holder(blk), b.RefCount(blk), b.Holder(blk))
			}
		}
		if e1 != nil {
			errs++
		}
		if s1 > 0 {
			sharedSeen++
		}
		if e1 == nil && s1 == 0 {
			fast++
			if len(list) == 1 && list[0] != NullBlock {
				single++ // freeBlocks' one-block path
			}
		}
	}
	// The draws reach every path: errors (with the one pass's queueing
	// undone), shared blocks, lists the one pass takes whole.
	if errs < 100 || sharedSeen < 100 || fast < 100 || single < 50 {
		t.Errorf("errors %d, shared %d, one pass only %d (one block %d) of 4000", errs, sharedSeen, fast, single)
	}
}
