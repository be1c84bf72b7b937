package statecache

// SlidingWindow is the sliding-window lookup at one block size, without
// EAGLE: only the last ⌈(window−1)/block⌉ blocks before the hit's end are
// needed, found scanning right to left; earlier positions are null. A
// test-only oracle, written apart from SlidingWindowManager's lookup
// (the rule a run uses, SlidingWindowHit), which the tests check against
// it, and a simple window rule for the coordinator's tests.
type SlidingWindow struct{ Block, Window int }

func (s SlidingWindow) BlockSize() int       { return s.Block }
func (s SlidingWindow) DownwardClosed() bool { return false }

func (s SlidingWindow) FindLongestCacheHit(p *BlockPool, hashes []BlockHash, maxLength, alignment int, groups []int32, dst [][]int32) int {
	need := (s.Window - 1 + s.Block - 1) / s.Block
	n := min(maxLength/s.Block, len(hashes))
	for i := range groups {
		dst[i] = dst[i][:0]
		for range n {
			dst[i] = append(dst[i], NullBlock)
		}
	}
	run := 0
	for i := n - 1; i >= 0; i-- {
		if !p.cachedAll(hashes, i, groups) {
			run = 0
			continue
		}
		// A run must end on an aligned boundary to start counting.
		if run == 0 && s.Block != alignment && (i+1)*s.Block%alignment != 0 {
			continue
		}
		for j, g := range groups {
			dst[j][i] = p.cachedBlock(hashes, i, g)
		}
		run++
		if run >= need {
			for j := range groups {
				dst[j] = dst[j][:i+run]
			}
			return i + run
		}
	}
	// No run long enough: the first run blocks still hit (a prefix
	// shorter than the window needs no earlier block).
	hit := run
	for hit > 0 && hit*s.Block%alignment != 0 {
		hit--
	}
	for j := range groups {
		dst[j] = dst[j][:hit]
	}
	return hit
}
