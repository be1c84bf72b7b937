package statecache

import (
	"fmt"
	"strconv"
	"strings"

	"statesim/model"
)

// MambaCacheMode is vLLM's mamba_cache_mode (vllm/config/cache.py,
// MambaCacheMode): how the Mamba groups take part in prefix caching.
type MambaCacheMode uint8

const (
	// MambaNone: no Mamba prefix caching; one state block (plus K
	// speculative ones) for a request's life, block size max_model_len.
	MambaNone MambaCacheMode = iota
	// MambaAlign: a running block, K speculative blocks and the previous
	// step's block kept one step as the copy source; a state is cached
	// only when a step ends exactly on a block boundary (PR #30877).
	MambaAlign
	// MambaAll: a block per block_size tokens, the state at every
	// boundary cached (PRs #25752, #26377).
	MambaAll
)

func (m MambaCacheMode) String() string {
	switch m {
	case MambaNone:
		return "none"
	case MambaAlign:
		return "align"
	case MambaAll:
		return "all"
	}
	return fmt.Sprintf("MambaCacheMode(%d)", uint8(m))
}

// ParseMambaCacheMode reads a mamba_cache_mode value; "" is vLLM's
// default, "none".
func ParseMambaCacheMode(s string) (MambaCacheMode, error) {
	switch s {
	case "", "none":
		return MambaNone, nil
	case "align":
		return MambaAlign, nil
	case "all":
		return MambaAll, nil
	}
	return 0, fmt.Errorf("unknown mamba_cache_mode %q (known: none, align, all)", s)
}

// Release is a vLLM release as major.minor. Patch releases change nothing
// these rules depend on, so they are dropped.
type Release struct{ Major, Minor int }

// ParseRelease reads "v0.28", "0.28" or "v0.28.1". Engine names that are
// not releases (statesim's "v0" control, the "fixed" alias) are the
// caller's to map.
func ParseRelease(s string) (Release, error) {
	parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Release{}, fmt.Errorf("vLLM release %q: want vMAJOR.MINOR", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return Release{}, fmt.Errorf("vLLM release %q: %q is not a number", s, p)
		}
		n[i] = v
	}
	return Release{n[0], n[1]}, nil
}

func (r Release) String() string { return fmt.Sprintf("v%d.%d", r.Major, r.Minor) }

// AtLeast reports whether r is o or later.
func (r Release) AtLeast(o Release) bool {
	return r.Major > o.Major || r.Major == o.Major && r.Minor >= o.Minor
}

// The releases that first shipped each change to the mode rules. A PR is
// dated by its merge; where the release is inferred from dates rather than
// read from the tag, docs/model.md ("Mamba cache modes") says so.
var (
	// #25752/#26377 (Oct 2025): Mamba2 then Mamba1 prefix caching, the
	// behaviour later named "all"; before, vLLM turned prefix caching off
	// for every hybrid model.
	relMambaPrefixCaching = Release{0, 12}
	// #30877 (Jan 2026): mamba_cache_mode and "align"; a model without
	// SupportsMambaPrefixCaching gets "align" instead of losing prefix
	// caching. Align refused speculative decoding until #33705.
	relAlignMode = Release{0, 15}
	relAlignSpec = Release{0, 16}
	// #40454 (2026-04-21): "align" when a speculative config exists. By
	// v0.26.0 the rule is gone (#50021 quotes v0.26.0's and v0.27.1's
	// resolution; #52317 shows v0.27.1 choosing "all" with a drafter);
	// which release dropped it was not read (likely #41233, May 2026,
	// which fixed "all" with speculative decoding): taken as v0.22.
	relSpecAlign    = Release{0, 20}
	relSpecAlignEnd = Release{0, 22}
	// #50991 (2026-08-04): prefix caching on by default for hybrid
	// models, default mode "align" (first in v0.28.0, out 2026-08-26).
	relHybridPrefixDefault = Release{0, 28}
)

// MambaModeConfig is what MambaModelConfig.verify_and_update_config
// (vllm/model_executor/models/config.py) reads to settle the mode.
type MambaModeConfig struct {
	Release Release
	// PrefixCaching is enable_prefix_caching; nil leaves it at the
	// release's default for a hybrid model.
	PrefixCaching *bool
	// Requested is mamba_cache_mode as given (unset: none), parsed once
	// by the caller (ParseMambaCacheMode).
	Requested MambaCacheMode
	// SupportsAll: the model class declares SupportsMambaPrefixCaching
	// (model.supports_mamba_prefix_caching), which "all" needs.
	SupportsAll bool
	// SpecDecode: a speculative config exists.
	SpecDecode bool
	// NoChunkedPrefill: enable_chunked_prefill is off ("align" asserts it
	// is on).
	NoChunkedPrefill bool
}

// ResolvedMambaMode is the outcome: whether prefix caching stays on, the
// mode, and why, as vLLM's log lines say it.
type ResolvedMambaMode struct {
	PrefixCaching bool
	Mode          MambaCacheMode
	Why           string
}

// ResolveMambaCacheMode applies vLLM's mode resolution for release
// c.Release. An error is a configuration vLLM refuses at start-up.
func ResolveMambaCacheMode(c MambaModeConfig) (ResolvedMambaMode, error) {
	req, r := c.Requested, c.Release
	if req != MambaNone && !r.AtLeast(relAlignMode) {
		return ResolvedMambaMode{}, fmt.Errorf("mamba_cache_mode %q: vLLM %s has no such option (it came with #30877, %s)", req, r, relAlignMode)
	}
	pc := r.AtLeast(relHybridPrefixDefault)
	why := "prefix caching off by default for hybrid models"
	if pc {
		why = "prefix caching on by default for hybrid models (#50991)"
	}
	if c.PrefixCaching != nil {
		pc = *c.PrefixCaching
		why = "enable_prefix_caching set"
	}
	if !pc {
		if req != MambaNone {
			why = "mamba cache mode set to 'none' when prefix caching is disabled"
		}
		return ResolvedMambaMode{false, MambaNone, why}, nil
	}
	if !r.AtLeast(relMambaPrefixCaching) {
		return ResolvedMambaMode{false, MambaNone, "prefix caching disabled: not yet supported for hybrid models"}, nil
	}
	if !r.AtLeast(relAlignMode) {
		// No modes yet: a supporting model caches every boundary, any
		// other loses prefix caching altogether.
		if !c.SupportsAll {
			return ResolvedMambaMode{false, MambaNone, "hybrid model without prefix caching support: disabling prefix caching"}, nil
		}
		return ResolvedMambaMode{true, MambaAll, "Mamba prefix caching (experimental)"}, nil
	}
	mode := req
	if mode == MambaNone {
		switch {
		case r.AtLeast(relHybridPrefixDefault):
			mode, why = MambaAlign, "mamba cache mode set to 'align' by default when prefix caching is enabled (#50991)"
		case c.SpecDecode && c.SupportsAll && r.AtLeast(relSpecAlign) && !r.AtLeast(relSpecAlignEnd):
			mode, why = MambaAlign, "mamba cache mode set to 'align' by default with speculative decoding (#40454)"
		case c.SupportsAll:
			mode, why = MambaAll, "mamba cache mode set to 'all' by default when prefix caching is enabled"
		default:
			mode, why = MambaAlign, "mamba cache mode set to 'align' by default when prefix caching is enabled"
		}
	} else {
		why = "mamba_cache_mode set"
	}
	if mode == MambaAll && !c.SupportsAll {
		mode, why = MambaAlign, "model without support for Mamba cache 'all' mode: falling back to 'align'"
	}
	if mode == MambaAlign {
		if c.NoChunkedPrefill {
			return ResolvedMambaMode{}, fmt.Errorf("mamba_cache_mode align needs enable_chunked_prefill")
		}
		if c.SpecDecode && !r.AtLeast(relAlignSpec) {
			return ResolvedMambaMode{}, fmt.Errorf("mamba_cache_mode align is not compatible with speculative decoding in vLLM %s (re-enabled by #33705, %s)", r, relAlignSpec)
		}
	}
	return ResolvedMambaMode{true, mode, why}, nil
}

// SupportsMambaPrefixCaching is the SupportsMambaPrefixCaching marker by
// state kind, as far as it follows the kind: the Mamba1 and Mamba2 mixers
// declare it; Gated DeltaNet is align-only (#26807 still open in May 2026),
// LFM2's ShortConv raises for "all", and the linear-attention and KDA
// models do not declare it (VLLM-FACTS-CURRENT §2.1).
func SupportsMambaPrefixCaching(k model.StateKind) bool {
	return k == model.Mamba1 || k == model.Mamba2
}

// MambaSpec is the part of vLLM's MambaSpec (vllm/v1/kv_cache_interface.py
// @ bc8282e6) the Mamba group's manager needs.
type MambaSpec struct {
	Mode MambaCacheMode
	// BlockSize is the Mamba group's block size B in tokens: the
	// attention block size in "align" and "all" (page unification makes
	// them one), max_model_len in "none", so that every request fits one block.
	BlockSize int
	// NumSpeculativeBlocks is K (num_speculative_blocks); 0 without
	// speculative decoding.
	NumSpeculativeBlocks int
	// SpecSafeFree: align mode's frees go by num_computed_tokens − K
	// (#33997).
	SpecSafeFree bool
}

// MaxBlocksPerRequest is MambaSpec.max_memory_usage_bytes in pages: what
// one request may hold at most. "all" counts no speculative blocks, as the
// spec reads at bc8282e6 (#41233's review notes that it should).
func (s MambaSpec) MaxBlocksPerRequest(maxModelLen int) int {
	switch s.Mode {
	case MambaAll:
		return mambaCeilDiv(maxModelLen, s.BlockSize)
	case MambaAlign:
		return 2 + s.NumSpeculativeBlocks
	}
	return 1 + s.NumSpeculativeBlocks
}

func (s MambaSpec) validate() error {
	if s.BlockSize <= 0 || s.NumSpeculativeBlocks < 0 || s.Mode > MambaAll {
		return fmt.Errorf("mamba spec: block size %d, %d speculative blocks, mode %v", s.BlockSize, s.NumSpeculativeBlocks, s.Mode)
	}
	return nil
}

func mambaCeilDiv(a, b int) int { return (a + b - 1) / b }
