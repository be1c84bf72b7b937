package statecache

import (
	"fmt"
	"testing"
)

// lastAligned is a test-only rule shaped like vLLM's Mamba lookup: only the
// state at the hit's end is needed, so it takes the rightmost cached block
// that ends on an aligned boundary, nulls before it. It shows a Mamba mode
// plugging in as a HitRule, and makes the coordinator restart rounds.
type lastAligned struct{ Block int }

func (l lastAligned) BlockSize() int       { return l.Block }
func (l lastAligned) DownwardClosed() bool { return false }
func (l lastAligned) FindLongestCacheHit(p *BlockPool, hashes []BlockHash, maxLength, alignment int, groups []int32, dst [][]int32) int {
	n := min(maxLength/l.Block, len(hashes))
	for i := n - 1; i >= 0; i-- {
		if (i+1)*l.Block%alignment != 0 || !p.cachedAll(hashes, i, groups) {
			continue
		}
		for j, g := range groups {
			dst[j] = dst[j][:0]
			for range i {
				dst[j] = append(dst[j], NullBlock)
			}
			dst[j] = append(dst[j], p.cachedBlock(hashes, i, g))
		}
		return i + 1
	}
	for j := range groups {
		dst[j] = dst[j][:0]
	}
	return 0
}

// accepts is each rule's acceptance of a hit of k blocks, written from the
// rules' definitions, not their code: full attention needs every block
// before k, the window the last `need` of them (all when k < need), the
// Mamba-like rule block k-1.
func accepts(p *BlockPool, hashes []BlockHash, r HitGroup, k int) bool {
	in := func(i int) bool { return p.cachedAll(hashes, i, r.Groups) }
	if k == 0 {
		return true
	}
	switch rule := r.Rule.(type) {
	case FullAttention:
		for i := range k {
			if !in(i) {
				return false
			}
		}
		return true
	case SlidingWindow:
		need := (rule.Window - 1 + rule.Block - 1) / rule.Block
		for i := max(0, k-need); i < k; i++ {
			if !in(i) {
				return false
			}
		}
		return true
	case lastAligned:
		return in(k - 1)
	}
	panic(fmt.Sprintf("rule %T", r.Rule))
}

// TestCoordinatorFindsTheLongestCommonHit: over random cache contents the
// fixed point returns the longest hit every rule accepts, with each
// group's blocks cached under the right hashes (null where not needed).
func TestCoordinatorFindsTheLongestCommonHit(t *testing.T) {
	const bs, nHash = 4, 10
	layouts := [][]HitGroup{
		{{FullAttention{bs}, []int32{0}}, {SlidingWindow{bs, 3*bs + 1}, []int32{1}}},
		{{FullAttention{bs}, []int32{0}}, {SlidingWindow{bs, 2*bs + 1}, []int32{1, 2}}, {lastAligned{bs}, []int32{3}}},
		{{lastAligned{bs}, []int32{0, 1}}, {SlidingWindow{bs, 2*bs + 1}, []int32{2}}},
		{{lastAligned{bs}, []int32{2}}, {FullAttention{bs}, []int32{0, 1}}},
	}
	x := uint64(3)
	rnd := func(n int) int { x = mix(x + 0x9e3779b97f4a7c15); return int(x % uint64(n)) }
	restarts := 0
	for li, rules := range layouts {
		groups := 0
		for _, r := range rules {
			groups += len(r.Groups)
		}
		c, err := NewHybridCoordinator(groups, rules)
		if err != nil {
			t.Fatal(err)
		}
		for trial := range 400 {
			p := NewBlockPoolWith(groups*nHash+1, PoolOptions{EnablePrefixCaching: true})
			hashes := AppendBlockHashes(nil, span(trial*1000, trial*1000+nHash*bs), bs)
			density := 1 + rnd(4) // of 4: how much of the prefix is cached
			for g := range groups {
				for i := range nHash {
					if rnd(4) < density {
						b := make([]int32, 1)
						p.GetNewBlocks(0, int32(g), b)
						// Position i's hash on a one-block list (its token
						// count is wrong, and unused by lookups).
						if err := p.CacheFullBlocks(0, int32(g), b, hashes[i:i+1], 0, 1, bs); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			maxLen := rnd(nHash*bs + 1)
			want := 0
			for k := maxLen / bs; k >= 0; k-- {
				all := true
				for _, r := range rules {
					all = all && accepts(p, hashes, r, k)
				}
				if all {
					want = k
					break
				}
			}
			got := c.FindLongestCacheHit(p, hashes, maxLen)
			if got != want*bs {
				t.Fatalf("layout %d trial %d (max %d tokens): hit %d tokens, want %d", li, trial, maxLen, got, want*bs)
			}
			for g := range groups {
				blocks := c.HitBlocks(int32(g))
				if len(blocks) != want {
					t.Fatalf("layout %d trial %d: group %d has %d blocks for a %d-block hit", li, trial, g, len(blocks), want)
				}
				for i, b := range blocks {
					if b == NullBlock {
						continue
					}
					if r := p.Record(b); !r.Cached || r.Hash != hashes[i] || r.Group != int32(g) {
						t.Fatalf("layout %d trial %d: group %d position %d is block %d holding %+v", li, trial, g, i, b, r)
					}
				}
			}
			if c.rounds > 1 {
				restarts++
			}
		}
	}
	if restarts == 0 {
		t.Error("no lookup needed a second round: the fixed point went untested")
	}
	t.Logf("%d lookups restarted a round", restarts)
}
