package report

// The values backends report about a run: the imposters the symbolic
// backend caught, a numeric backend's comparison with its reference, and
// one request's tokens against the reference's. They live here, with
// their readers (the report, explain, gpuconfirm), so that reading a
// report needs no backend.

// Imposter is bug A caught in the act: a request with no computed tokens
// on the Mamba decode path that read a slot holding another request's bytes.
type Imposter struct {
	RequestID    int64  `json:"request_id"`
	Step         int64  `json:"step"`
	NumScheduled int    `json:"num_scheduled"`
	Slot         int64  `json:"slot"`
	PrevOwner    int64  `json:"prev_owner"`
	PrevContent  string `json:"prev_content"`
	PrevTokens   int    `json:"prev_tokens"`
	PrevStep     int64  `json:"prev_step"`
	// Preempted: the request had been preempted and came back with its
	// computed tokens reset, rather than arriving new.
	Preempted bool `json:"preempted,omitempty"`
}

// DivergenceStats are a numeric backend's comparison and work counters.
type DivergenceStats struct {
	RequestsCompared  int64   `json:"requests_compared"`
	RequestsDivergent int64   `json:"requests_divergent"`
	TokensCompared    int64   `json:"tokens_compared"`
	TokensDivergent   int64   `json:"tokens_divergent"`
	MaxDelta          float64 `json:"max_delta"` // over every compared token
	Threshold         float64 `json:"threshold"`
	// TokensComputed counts engine forward tokens (recomputation
	// included), TokensSampled engine samples, ReferenceTokens the
	// reference run's forward tokens.
	TokensComputed  int64 `json:"tokens_computed"`
	TokensSampled   int64 `json:"tokens_sampled"`
	ReferenceTokens int64 `json:"reference_tokens"`
	// CacheBytes is the host memory the engine's cache tensors held at
	// the end, their peak (the mock allocates them as written and frees
	// nothing); 0 where the backend does not count it. For tests and
	// benchmarks: the JSON report leaves it out, so the hashed outputs
	// stay as they were.
	CacheBytes int64 `json:"-"`
}

// Divergence is one request whose engine log-probs differ from the
// reference's by more than the threshold. Token indices count generated
// tokens from 0.
type Divergence struct {
	RequestID     int64   `json:"request_id"`
	FirstBadToken int     `json:"first_bad_token"`
	MaxDelta      float64 `json:"max_delta"`
	// At the first bad token: the engine's token and log-prob, the
	// reference's log-prob of that same token, and the reference's own
	// greedy token there.
	EngineLogProb float64 `json:"engine_logprob"`
	RefLogProb    float64 `json:"reference_logprob"`
	EngineToken   int32   `json:"engine_token"`
	RefToken      int32   `json:"reference_token"`
	// FirstBadStep is the engine step that sampled the first bad token.
	FirstBadStep   int64 `json:"first_bad_step"`
	NumGenerated   int   `json:"num_generated"`
	NumBadTokens   int   `json:"num_bad_tokens"`
	NumPromptToken int   `json:"num_prompt_tokens"`
	// CorruptStep is the request's CorruptStep when it finished: the step
	// the symbolic check first saw it compute on bytes not its own, or -1.
	CorruptStep int64 `json:"corrupt_step"`
}

// TokenTrace compares one generated token with the reference.
type TokenTrace struct {
	Index       int     `json:"index"`
	Token       int32   `json:"token"`
	EngineLP    float64 `json:"engine_logprob"`
	ReferenceLP float64 `json:"reference_logprob"`
}
