package statecache

import "fmt"

// SlidingWindowHit is a sliding-window group's HitRule at its own block
// size: SlidingWindowManager's lookup (SlidingWindowManager.
// find_longest_cache_hit, single_type_kv_cache_manager.py @ 6adad0876),
// so the group joins a HybridCoordinator beside FullAttention and
// MambaHit. Under the EAGLE drop the manager applies it as vLLM's finder
// does (one more contiguous block, the run's alignment checked after the
// drop, the hit cut to the alignment again), not as a block popped after
// the lookup. The hashes it is given are already at the group's block
// size (the coordinator's view), and the alignment is the coordinator's.
type SlidingWindowHit struct{ Manager *SlidingWindowManager }

func (s SlidingWindowHit) BlockSize() int { return s.Manager.Spec.BlockSize }

// DownwardClosed is false: a hit needs only the blocks in the window
// before its end.
func (s SlidingWindowHit) DownwardClosed() bool { return false }

func (s SlidingWindowHit) FindLongestCacheHit(p *BlockPool, hashes []BlockHash, maxLength, alignment int, groups []int32, dst [][]int32) int {
	return s.Manager.findLongestCacheHitView(p, hashes, maxLength, alignment, false, groups, dst)
}

func (s SlidingWindowHit) findLongestCacheHitDrop(p *BlockPool, hashes []BlockHash, maxLength, alignment int, groups []int32, dst [][]int32) int {
	return s.Manager.findLongestCacheHitView(p, hashes, maxLength, alignment, true, groups, dst)
}

// checkAlignment refuses a rule the coordinator's alignment and hash
// block do not fit: a sliding window needs an alignment that is a
// multiple of its block (the manager's assertion: no fine-grained
// sliding-window hits), and its manager's spec must name the
// coordinator's hash block, scheduler block (the lcm) and alignment, which its
// CacheBlocks and standalone lookup use.
func checkAlignment(r HitGroup, alignment, hashBlock, schedBlock int) error {
	sw, ok := r.Rule.(SlidingWindowHit)
	if !ok {
		return nil
	}
	if sw.Manager == nil {
		return fmt.Errorf("sliding-window hit rule over groups %v has no manager", r.Groups)
	}
	s := sw.Manager.Spec
	if alignment%s.BlockSize != 0 {
		return fmt.Errorf("sliding-window group %d: hit alignment %d tokens is not a multiple of its block size %d (no fine-grained sliding-window hits)", sw.Manager.Group, alignment, s.BlockSize)
	}
	if s.hashBlock() != hashBlock || s.schedBlock() != schedBlock || s.hitAlignment() != alignment {
		return fmt.Errorf("sliding-window group %d: spec has hash block %d, scheduler block %d and hit alignment %d; the coordinator %d, %d and %d", sw.Manager.Group, s.hashBlock(), s.schedBlock(), s.hitAlignment(), hashBlock, schedBlock, alignment)
	}
	in := false
	for _, g := range r.Groups {
		in = in || g == sw.Manager.Group
	}
	if !in {
		return fmt.Errorf("sliding-window group %d: not among its rule's groups %v", sw.Manager.Group, r.Groups)
	}
	return nil
}
