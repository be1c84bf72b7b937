package cuda

import "statesim/backend/mock"

// Parity compares the GPU engine with the mock engine run in the shadow,
// per generated token, up to the first token where the two sampled
// different ids (after which the sequences differ).
type Parity struct {
	TokensCompared int64   `json:"tokens_compared"`
	MaxDelta       float64 `json:"max_abs_delta_logprob"`
	// TokenMismatches counts requests whose sampled ids differ somewhere.
	TokenMismatches int64 `json:"token_mismatches"`
}

// Summary is the backend's report section (report.Extra["cuda"]). The
// GPU's own comparison with the reference is the report's Divergence,
// read through backend.Differ like every numeric backend's; this section
// adds only what is the CUDA backend's: the device, and with a shadow the
// mock engine's comparison with the reference and the GPU-against-mock
// parity.
type Summary struct {
	Device            string            `json:"device"`
	IndexBits         uint              `json:"index_bits"`
	ShadowStats       *mock.Stats       `json:"shadow_stats,omitempty"`
	ShadowDivergences []mock.Divergence `json:"shadow_divergences,omitempty"`
	Parity            *Parity           `json:"parity,omitempty"`
	// StateKernelLaunches counts the state kernels' launches (StateBackend).
	StateKernelLaunches int64 `json:"state_kernel_launches,omitempty"`
}
