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
	last := numTokens - numTokens%blockSize
	if eagle {
		last = max(last-blockSize, 0)
	}
	switch end := numComputed + numScheduled; {
	case end < last:
		return numScheduled / blockSize * blockSize
	case numComputed < last && last < end:
		return last - numComputed
	}
	return numScheduled
}

// CheckMambaAlignBudget is the start-up check of align mode (PR #34445):
// a block must fit one step's token budget, or every prefill chunk would
// round to 0 and the request never run.
func CheckMambaAlignBudget(blockSize, maxNumBatchedTokens int) error {
	if blockSize > maxNumBatchedTokens {
		return fmt.Errorf("mamba_cache_mode align: block_size %d must be <= max_num_batched_tokens %d", blockSize, maxNumBatchedTokens)
	}
	return nil
}
