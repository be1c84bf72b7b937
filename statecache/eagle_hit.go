package statecache

// EagleMamba is how the Mamba group's hit lookup treats the EAGLE drop
// (use_eagle: MTP or EAGLE drafting with prefix caching).
//
// The drafter's KV for a prefix's last block is not final (its last
// position waits for the next token's hidden state), so the full-attention
// finder under drop_eagle_block looks one block past the candidate and
// drops the last block it matched (FullAttentionManager.
// find_longest_cache_hit, single_type_kv_cache_manager.py; the
// coordinator's `_max_length = min(curr_hit_length + block_size,
// max_cache_hit_length)`, kv_cache_coordinator.py, as #43650 quotes it).
// The Mamba group is flagged EAGLE as well (every group is, when none is
// flagged), so its lookup gets the same one-block margin, but
// MambaManager.find_longest_cache_hit takes drop_eagle_block and never
// acts on it (issue #53912; #48375's table). The simple hybrid's one
// round then ends with the Mamba hit one block past the attention hit:
// the request starts there, its attention table one block short of it.
type EagleMamba uint8

const (
	// EagleMambaIgnored is every release before #46384: the margin, no drop.
	EagleMambaIgnored EagleMamba = iota
	// EagleMambaHonored is open PR #48375: the Mamba finder honours the
	// drop like the attention finders, so its margin block is dropped
	// again: no state past the candidate (modelled on the ceiling: a
	// state at or below max_length − block).
	EagleMambaHonored
	// EagleMambaNoMargin is open PR #57128 as written against main: the
	// coordinator gives the Mamba group no margin (main's "No margin for
	// mamba") and the finder drops the candidate's last block, so the
	// state restored lies a block below the attention hit. Without
	// fine-grained hashes (not modelled) its scan equals a ceiling one
	// block lower.
	EagleMambaNoMargin
	// EagleMambaUnmargined is vLLM's coordinator from #46384
	// (481e481be, 2026-07-12; still @ 6adad0876): no margin for the
	// Mamba group ("its finder never drops") and no drop, so the state
	// lies at or below the candidate.
	EagleMambaUnmargined
)

// eagleCeiling is the largest hit, in tokens, rule r may return under the
// EAGLE drop when the candidate is cur of at most max tokens, and whether
// r then drops its last matched block.
func eagleCeiling(r HitRule, m EagleMamba, cur, max, bs int) (ceiling int, drop bool) {
	if _, ok := r.(MambaHit); ok {
		switch m {
		case EagleMambaHonored:
			return min(cur+bs, max) - bs, false
		case EagleMambaNoMargin:
			return cur - bs, false
		case EagleMambaUnmargined:
			return cur, false
		}
		return min(cur+bs, max), false
	}
	return min(cur+bs, max), true
}
