package statecache

// MambaHit is the Mamba group's HitRule (vLLM's
// MambaManager.find_longest_cache_hit, single_type_kv_cache_manager.py @
// 129ab7c6). A state is self-contained: only the one at the hit's end is
// needed, so the hashes are scanned right to left and the last cached
// block whose end is a multiple of the coordinator's alignment wins; the
// positions before it are null. "align" and "all" look up alike (they
// differ in what gets cached); "none" never hits, since vLLM runs it only
// with prefix caching off.
type MambaHit struct {
	Mode MambaCacheMode
	// Block is the Mamba block size; in "none" mode it only has to match
	// the other rules' (the coordinator takes one block size).
	Block int
}

func (m MambaHit) BlockSize() int { return m.Block }

// DownwardClosed is false: a state cached at block k says nothing of the
// blocks before it.
func (m MambaHit) DownwardClosed() bool { return false }

func (m MambaHit) FindLongestCacheHit(p *BlockPool, hashes []BlockHash, maxLength, alignment int, groups []int32, dst [][]int32) int {
	for j := range groups {
		dst[j] = dst[j][:0]
	}
	if m.Mode == MambaNone || p.pc == nil {
		return 0
	}
	n := min(maxLength/m.Block, len(hashes))
	for i := n - 1; i >= 0; i-- {
		if !p.cachedAll(hashes, i, groups) {
			continue
		}
		if m.Block != alignment && (i+1)*m.Block%alignment != 0 {
			continue
		}
		for j, g := range groups {
			for range i {
				dst[j] = append(dst[j], NullBlock)
			}
			dst[j] = append(dst[j], p.cachedBlock(hashes, i, g))
		}
		return i + 1
	}
	return 0
}
