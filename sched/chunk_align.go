package sched

import "fmt"

// AlignMambaChunk is the prefill chunk alignment of Mamba "align" mode
// (MambaPrefillChunkAlignmentPolicy.align_scheduled_tokens,
// vllm/v1/core/sched/prefill_chunk_alignment.py @ 9dc587ca; earlier
// Scheduler._mamba_block_aligned_split): align mode caches a state only
// where a step ends on a block boundary, so prefill chunks are cut to
// boundaries. numComputed counts a waiting request's hit tokens too;
// numTokens is prompt plus output (a resumed request replays its output
// as prefill). It returns the tokens to schedule:
//   - past prefill (numComputed ≥ max(numPrompt, numTokens−1)): unchanged;
//   - a chunk ending before the last boundary (numTokens rounded down to
//     B, one block less under EAGLE, whose attention drops its last hit
//     block) is rounded down to a multiple of B, to 0 when it is under B:
//     the scheduler then skips the request this step ("insufficient budget
//     for a block-aligned chunk"); PRs #40757 and #40709, which would keep
//     such a sub-block chunk, were open in 2026;
//   - a chunk straddling the last boundary ends on it;
//   - the tail after it is scheduled as is.
func AlignMambaChunk(numComputed, numScheduled, numPrompt, numTokens, blockSize int, eagle bool) int {
	if numComputed >= max(numPrompt, numTokens-1) {
		return numScheduled
	}
	last := lastCachePosition(numTokens, blockSize, eagle)
	switch end := numComputed + numScheduled; {
	case end < last:
		return numScheduled / blockSize * blockSize
	case numComputed < last && last < end:
		return last - numComputed
	}
	return numScheduled
}

// lastCachePosition is last_cache_position: the last block boundary of
// numTokens whose state align mode can cache, one block less under EAGLE.
func lastCachePosition(numTokens, blockSize int, eagle bool) int {
	last := numTokens - numTokens%blockSize
	if eagle {
		last = max(last-blockSize, 0)
	}
	return last
}

// AlignMambaChunkTail is AlignMambaChunk with the stop that fine-grained
// prefix-cache hits add (mamba_partial_cache_hit, #46384: 481e481be;
// Scheduler._mamba_block_aligned_split, vllm/v1/core/sched/scheduler.py
// @ 6adad0876 lines 366-441): a prompt whose last hash boundary
// (numPrompt rounded down to hashBlock) lies past the last cacheable
// block boundary and short of the prompt's end stops a chunk that
// crosses it there, so that the step ending on it registers the
// prompt's partial-tail entry. AlignMambaChunk's cuts all end at or
// before the last boundary, below that stop, so the stop applies only
// to the tail it leaves as is. The split's other stops at 6adad0876 are
// not modelled: a chunk starting inside a block stopping at the next
// boundary (a partial hit's resume, also #46384's) and the Marconi
// shared-prefix junction (#47782). hashBlock ≤ 0 adds no stop.
func AlignMambaChunkTail(numComputed, numScheduled, numPrompt, numTokens, blockSize, hashBlock int, eagle bool) int {
	n := AlignMambaChunk(numComputed, numScheduled, numPrompt, numTokens, blockSize, eagle)
	if hashBlock <= 0 {
		return n
	}
	tail := numPrompt / hashBlock * hashBlock
	if lastCachePosition(numTokens, blockSize, eagle) < tail && tail < numPrompt && numComputed < tail && tail < numComputed+n {
		return tail - numComputed
	}
	return n
}

// AlignMambaChunkStops is the align split from #51113 on
// (Scheduler._mamba_block_aligned_split, scheduler.py @ 6adad0876 lines
// 366-441): the chunk [numComputed, numComputed+numScheduled) of a
// prefill ending before the prefill's end (max(numPrompt, numTokens−1))
// has its end floored to a block boundary, unless that leaves it no
// tokens and a block is wider than maxPrefill (the step's prefill
// budget, long_prefill_token_threshold included): then it advances
// inside the block. It then ends at the earliest of these strictly
// inside it: the next boundary when it starts inside a block (a partial
// hit's resume), the last cacheable boundary (lastCachePosition), and
// with hashBlock > 0 the prompt's last hash boundary when that lies
// past the last cacheable boundary (the fine-grained tail stop). The
// Marconi shared-prefix junction (#47782) is not modelled.
func AlignMambaChunkStops(numComputed, numScheduled, numPrompt, numTokens, blockSize, hashBlock, maxPrefill int, eagle bool) int {
	start := numComputed
	prefillEnd := max(numPrompt, numTokens-1)
	if start >= prefillEnd {
		return numScheduled
	}
	last := lastCachePosition(numTokens, blockSize, eagle)
	end := start + numScheduled
	if end < prefillEnd {
		if aligned := end / blockSize * blockSize; aligned > start || blockSize <= maxPrefill {
			end = aligned
		}
	}
	stop := func(s int) {
		if start < s && s < end {
			end = s
		}
	}
	if start%blockSize != 0 {
		stop((start/blockSize + 1) * blockSize)
	}
	stop(last)
	if hashBlock > 0 {
		if tail := numPrompt / hashBlock * hashBlock; last < tail && tail < numPrompt {
			stop(tail)
		}
	}
	return max(end-start, 0)
}

// CheckMambaAlignBudget is the start-up check of align mode (PR #34445,
// until #50000): a block must fit one step's token budget, or every
// prefill chunk would round to 0 and the request never run.
func CheckMambaAlignBudget(blockSize, maxNumBatchedTokens int) error {
	if blockSize > maxNumBatchedTokens {
		return fmt.Errorf("mamba_cache_mode align: block_size %d must be <= max_num_batched_tokens %d", blockSize, maxNumBatchedTokens)
	}
	return nil
}

// CheckMambaAlignThreshold is #35122's start-up check of align mode
// (VllmConfig.validate_block_size, vllm/config/vllm.py @ 77a73458e): a
// long_prefill_token_threshold (0: off) below the block would round
// every capped chunk to 0. #50000 removed it with #34445's, making the
// split advance inside the block (AlignMambaChunkStops).
func CheckMambaAlignThreshold(blockSize, longPrefillTokenThreshold int) error {
	if longPrefillTokenThreshold > 0 && longPrefillTokenThreshold < blockSize {
		return fmt.Errorf("mamba_cache_mode align: long_prefill_token_threshold %d must be >= block_size %d", longPrefillTokenThreshold, blockSize)
	}
	return nil
}

// Marconi is the align split's stop at an uncached shared prefix: a
// request whose attention hit runs past its Mamba hit shares tokens
// whose state no request cached, so a chunk stops on the last block
// boundary in them and the state there is cached for the next sibling.
type Marconi uint8

const (
	MarconiOff Marconi = iota
	// MarconiHint is #37898 (dc66e01a7, 2026-06-10): the request that
	// looked its prefix up this step cuts its chunk to the uncached
	// tokens, in whole blocks, when they are a block or more
	// (Scheduler._mamba_block_aligned_split's
	// num_uncached_common_prefix_tokens).
	MarconiHint
	// MarconiBoundary is #47782 (8ac837527, 2026-07-13): the lookup
	// stores the junction on the request (shared_prefix_boundary), and
	// every chunk crossing it stops on the last block boundary before it
	// (scheduler.py @ 6adad0876 lines 432-437).
	MarconiBoundary
)

// MarconiStop applies m to an align chunk of n tokens from numComputed:
// boundary is the request's shared_prefix_boundary, uncached the tokens
// a lookup this step found uncached past its hit (0 otherwise).
func MarconiStop(m Marconi, numComputed, n, boundary, uncached, blockSize int) int {
	switch m {
	case MarconiHint:
		if uncached >= blockSize && n > uncached {
			return uncached / blockSize * blockSize
		}
	case MarconiBoundary:
		if end := numComputed + n; numComputed < boundary && boundary < end {
			if s := numComputed + (boundary-numComputed)/blockSize*blockSize; numComputed < s {
				return s - numComputed
			}
		}
	}
	return n
}
