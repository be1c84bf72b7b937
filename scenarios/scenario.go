package scenarios

import (
	"fmt"

	"statesim/model"
	"statesim/workload"
)

// Scenario is one replayable experiment. A seed and a scenario determine a
// run byte for byte.
type Scenario struct {
	Name        string        `yaml:"name" json:"name"`
	Description string        `yaml:"description" json:"description,omitempty"`
	Seed        uint64        `yaml:"seed" json:"seed"`
	Model       ModelSpec     `yaml:"model" json:"model"`
	Engine      Engine        `yaml:"engine" json:"engine"`
	Device      Device        `yaml:"device" json:"device"`
	Workload    workload.Spec `yaml:"workload" json:"workload"`
	Sampling    Sampling      `yaml:"sampling" json:"sampling"`
	Backend     BackendSpec   `yaml:"backend" json:"backend"`
	Timing      Timing        `yaml:"timing" json:"timing"`
	Checks      Checks        `yaml:"checks" json:"checks"`

	// File is where the scenario came from (for relative paths and errors).
	File string `yaml:"-" json:"-"`
}

// ModelSpec is a preset plus explicit overrides of its fields.
type ModelSpec struct {
	Preset string `yaml:"preset" json:"preset,omitempty"`
	// HFConfig is a Hugging Face config.json the shape is derived from
	// (instead of a preset; see docs/models.md).
	HFConfig    string `yaml:"hf_config" json:"hf_config,omitempty"`
	model.Shape `yaml:",inline" json:",inline"`
}

// Engine holds vLLM's engine arguments under their own names, plus the
// version model and the kernel index width under test.
type Engine struct {
	VLLMVersion               string  `yaml:"vllm_version" json:"vllm_version"`
	MaxNumBatchedTokens       int     `yaml:"max_num_batched_tokens" json:"max_num_batched_tokens"`
	MaxNumSeqs                int     `yaml:"max_num_seqs" json:"max_num_seqs"`
	MaxModelLen               int     `yaml:"max_model_len" json:"max_model_len"`
	BlockSize                 int     `yaml:"block_size" json:"block_size"`
	GPUMemoryUtilization      float64 `yaml:"gpu_memory_utilization" json:"gpu_memory_utilization"`
	NumGPUBlocksOverride      int     `yaml:"num_gpu_blocks_override" json:"num_gpu_blocks_override"`
	EnableChunkedPrefill      bool    `yaml:"enable_chunked_prefill" json:"enable_chunked_prefill"`
	LongPrefillTokenThreshold int     `yaml:"long_prefill_token_threshold" json:"long_prefill_token_threshold"`
	SchedulingPolicy          string  `yaml:"scheduling_policy" json:"scheduling_policy"`
	// EnablePrefixCaching: attention blocks hashed, cached and shared by
	// hit. Left out (nil), it takes vLLM's default, which package setup
	// decides (hybrids from v0.28 included) where it settles the run.
	EnablePrefixCaching *bool `yaml:"enable_prefix_caching" json:"enable_prefix_caching,omitempty"`
	// MambaCacheMode is vLLM's mamba_cache_mode (none, align, all; left
	// out: the release's choice, as package setup settles it);
	// MambaBlockSize its block size (0: block_size, the only size
	// modelled: page unification; in all mode, the chunk).
	MambaCacheMode string `yaml:"mamba_cache_mode" json:"mamba_cache_mode,omitempty"`
	MambaBlockSize int    `yaml:"mamba_block_size" json:"mamba_block_size,omitempty"`
	// PrefixMatchUnit is cache_config.prefix_match_unit (vLLM's #46384):
	// the hash block that overrides the gcd of the KV cache groups' blocks
	// where vLLM hashes finer than a block (package setup settles where it
	// applies); 0 leaves it unset (None).
	PrefixMatchUnit int `yaml:"prefix_match_unit" json:"prefix_match_unit,omitempty"`
	// StateIndexBits is the width the prefill kernel forms slot × stride
	// in: 32 reproduces bug B, 64 is the fix; 16..31 scale the bug down
	// so small pools can show it.
	StateIndexBits int `yaml:"state_index_bits" json:"state_index_bits"`
	// ForcePrefillPath is the seeds' diagnostic: every row takes the Mamba
	// prefill path.
	ForcePrefillPath bool `yaml:"force_prefill_path" json:"force_prefill_path"`
	// Cache arguments under vLLM's names (docs/models.md): tensor
	// parallelism, the state and KV dtypes ("auto": the model's), and the
	// attention backend's kernel block alignment (0: the backend's own).
	TensorParallelSize       int    `yaml:"tensor_parallel_size" json:"tensor_parallel_size"`
	MambaCacheDType          string `yaml:"mamba_cache_dtype" json:"mamba_cache_dtype"`
	MambaSSMCacheDType       string `yaml:"mamba_ssm_cache_dtype" json:"mamba_ssm_cache_dtype"`
	KVCacheDType             string `yaml:"kv_cache_dtype" json:"kv_cache_dtype"`
	KernelBlockAlignmentSize int    `yaml:"kernel_block_alignment_size" json:"kernel_block_alignment_size"`
	// Patches add (+N) or remove (-N) single vLLM PRs on top of
	// vllm_version (sched.Patched), e.g. [+53059] or [-51565].
	Patches []string `yaml:"patches" json:"patches,omitempty"`
	// CUDAGraphMode is the compilation config's cudagraph_mode (none,
	// piecewise, full_decode_only, full_and_piecewise). vLLM V1 defaults
	// to full_and_piecewise; statesim defaults to none (eager), the model
	// every earlier result was measured with.
	CUDAGraphMode string `yaml:"cudagraph_mode" json:"cudagraph_mode,omitempty"`
	// ModelRunner is the model runner (v1: GPUModelRunner, v2: Model
	// Runner V2, vllm/v1/worker/gpu/); empty: the release's default, V2
	// from v0.29.0 (#53183). Only the CUDA-graph dispatch's #53059 guard
	// differs between them here (docs/model.md).
	ModelRunner string `yaml:"model_runner" json:"model_runner,omitempty"`
	// Speculative is vLLM's speculative_config (off when method is empty).
	Speculative Speculative `yaml:"speculative" json:"speculative,omitempty"`
	// AsyncScheduling is the scheduler config's async_scheduling: step
	// N+1 is scheduled before step N's output is applied (sched/async.go).
	// vLLM turns it on by default from v0.14; statesim defaults to off,
	// the order every earlier result was measured in (docs/model.md).
	AsyncScheduling bool `yaml:"async_scheduling" json:"async_scheduling,omitempty"`
	// KVTransferConfig is vLLM's kv_transfer_config (off when
	// kv_connector is empty).
	KVTransferConfig KVTransferConfig `yaml:"kv_transfer_config" json:"kv_transfer_config,omitzero"`
}

// KVTransferConfig attaches a KV connector to the scheduler. Only its
// local prefix lookup is modelled: the external store holds nothing the
// local cache lacks, so every external hit is 0 (docs/model.md, "KV
// connectors on hybrids").
type KVTransferConfig struct {
	// KVConnector is the connector's registry name: NixlConnector,
	// OffloadingConnector or LMCacheConnectorV1; empty: none.
	KVConnector string `yaml:"kv_connector" json:"kv_connector,omitempty"`
}

// The range of engine.state_index_bits, checked here and by the flags and
// search bounds that draw it: 32 reproduces bug B, 64 is the fix, and
// 16..31 scale the bug down so that small pools reach the wrap.
const (
	MinStateIndexBits  = 16
	MaxStateIndexBits  = 64
	StateIndexBitsNote = "(32 = vLLM before PR #35275, 64 = fixed)"
)

// Speculative is speculative_config plus the acceptance model that stands
// in for the rejection sampler: accepted (a fixed count per decode row)
// or acceptance_rate (each draft in turn accepted with that probability
// until the first rejection), drawn from the scenario's "spec" stream.
type Speculative struct {
	// Method: mtp, eagle, ngram or dflash; empty: speculative decoding off.
	Method               string `yaml:"method" json:"method,omitempty"`
	NumSpeculativeTokens int    `yaml:"num_speculative_tokens" json:"num_speculative_tokens,omitempty"`
	// Draft is a DFlash drafter's attention layers (method dflash), as
	// its config.json gives them; only sliding-window drafters are
	// modelled.
	Draft DraftConfig `yaml:"draft" json:"draft,omitempty"`
	// Accepted >= 0 fixes the accepted drafts per row (capped at the
	// drafts scheduled); -1 (the default) draws with AcceptanceRate.
	Accepted       int     `yaml:"accepted" json:"accepted,omitempty"`
	AcceptanceRate float64 `yaml:"acceptance_rate" json:"acceptance_rate,omitempty"`
}

// DraftConfig is a drafter's attention geometry under its config.json
// keys: num_hidden_layers layers of num_key_value_heads × head_dim, each
// with sliding_window tokens (dflash_config.swa_window_size where the
// checkpoint sets use_swa).
type DraftConfig struct {
	NumHiddenLayers  int `yaml:"num_hidden_layers" json:"num_hidden_layers,omitempty"`
	NumKeyValueHeads int `yaml:"num_key_value_heads" json:"num_key_value_heads,omitempty"`
	HeadDim          int `yaml:"head_dim" json:"head_dim,omitempty"`
	SlidingWindow    int `yaml:"sliding_window" json:"sliding_window,omitempty"`
	KernelBlockSize  int `yaml:"kernel_block_size" json:"kernel_block_size,omitempty"`
}

// Window is d as the layout takes it.
func (d DraftConfig) Window() model.DraftWindow {
	return model.DraftWindow{NumLayers: d.NumHiddenLayers, NumKVHeads: d.NumKeyValueHeads, HeadDim: d.HeadDim,
		SlidingWindow: d.SlidingWindow, KernelBlock: d.KernelBlockSize}
}

// Device is the accelerator the memory model sizes the pool for.
type Device struct {
	Name          string  `yaml:"name" json:"name"`
	MemoryGiB     float64 `yaml:"memory_gib" json:"memory_gib"`
	ActivationGiB float64 `yaml:"activation_gib" json:"activation_gib"`
}

// Sampling is the request sampling parameters.
type Sampling struct {
	Temperature float64 `yaml:"temperature" json:"temperature"`
}

// BackendSpec picks the backend that executes batches.
type BackendSpec struct {
	// Kind: symbolic (cache accesses only), mock (pure-Go numeric model
	// with a reference run) or cuda (real kernels, -tags cuda).
	Kind string `yaml:"kind" json:"kind"`
	// DivergenceThreshold is the |Δ log-prob| above which a generated
	// token counts as divergent from the reference.
	DivergenceThreshold float64 `yaml:"divergence_threshold" json:"divergence_threshold"`
	// WeightSeed seeds the numeric model's weights (0: the scenario seed).
	WeightSeed uint64 `yaml:"weight_seed" json:"weight_seed,omitempty"`
	// Shadow (cuda only) also runs the mock engine on every batch, so that
	// the report's extra.cuda.parity compares the GPU's log-probs with the
	// mock's token by token (gpu-confirm sets it).
	Shadow bool `yaml:"shadow" json:"shadow,omitempty"`
}

// Timing is the step-time model: a step costs overhead + prefill tokens ×
// PrefillTokenNS + decode rows × DecodeRowNS + context tokens read ×
// ContextTokenNS + state bytes moved / StateBandwidthGBs.
type Timing struct {
	StepOverheadUS    float64 `yaml:"step_overhead_us" json:"step_overhead_us"`
	PrefillTokenNS    float64 `yaml:"prefill_token_ns" json:"prefill_token_ns"`
	DecodeRowNS       float64 `yaml:"decode_row_ns" json:"decode_row_ns"`
	ContextTokenNS    float64 `yaml:"context_token_ns" json:"context_token_ns"`
	StateBandwidthGBs float64 `yaml:"state_bandwidth_gbs" json:"state_bandwidth_gbs"`
	// HostStepUS is, under async scheduling, the host's time from
	// launching a step to the next step's _update_states (the engine's
	// update_from_output and schedule, the runner's row moves). The
	// simulated clock spends none of it: it decides only whether the step
	// in flight's accepted-count copy lands before those row moves (when
	// the step takes no longer) or after them (sched/accepted.go).
	HostStepUS float64 `yaml:"host_step_us,omitempty" json:"host_step_us,omitempty"`
}

// Checks tunes the invariant checker.
type Checks struct {
	// Keep is how many occurrences of each invariant are listed in the
	// report (all are counted).
	Keep int `yaml:"keep" json:"keep"`
	// MaxSteps bounds a run; reaching it is a liveness violation. 0 (the
	// default) scales with the workload: see StepLimit.
	MaxSteps int64 `yaml:"max_steps" json:"max_steps"`
	// MaxMemoryGiB refuses a configuration whose estimated host memory
	// (block pool, provenance, numeric caches) exceeds it, before
	// anything is allocated; 0 is DefaultMaxMemoryGiB.
	MaxMemoryGiB float64 `yaml:"max_memory_gib" json:"max_memory_gib"`
}

// Step limit of checks.max_steps: 0 = a base plus a multiple of the tokens
// of every request that has arrived. A non-empty step schedules at least
// one token, and a run schedules each request's prompt + output once plus
// what recompute preemptions redo, so only a preemption storm (or a
// scheduler that stops making progress) reaches the limit, however long
// the trace.
const (
	autoStepBase     = 1_000_000
	autoStepPerToken = 8
)

// StepLimit is the step bound once requests totalling tokensArrived
// prompt + output tokens have arrived.
func (c *Checks) StepLimit(tokensArrived int64) int64 {
	if c.MaxSteps > 0 {
		return c.MaxSteps
	}
	return autoStepBase + autoStepPerToken*tokensArrived
}

// Defaults returns a scenario with vLLM's defaults for an H200 (offline
// engine: 16384 batched tokens, 1024 sequences) and a calibrated-looking
// step-time model; loading a file decodes on top of it.
func Defaults() Scenario {
	return Scenario{
		Seed: 1,
		Engine: Engine{
			VLLMVersion: "fixed", MaxNumBatchedTokens: 16384, MaxNumSeqs: 1024, MaxModelLen: 32768,
			BlockSize: 16, GPUMemoryUtilization: 0.9, EnableChunkedPrefill: true,
			SchedulingPolicy: "fcfs", StateIndexBits: 64, CUDAGraphMode: "none",
			Speculative:        Speculative{Accepted: -1},
			TensorParallelSize: 1, MambaCacheDType: "auto", MambaSSMCacheDType: "auto", KVCacheDType: "auto",
		},
		Device:   Device{Name: "H200", MemoryGiB: 139, ActivationGiB: 2},
		Backend:  BackendSpec{Kind: "symbolic", DivergenceThreshold: 1e-3},
		Timing:   Timing{StepOverheadUS: 1500, PrefillTokenNS: 15000, DecodeRowNS: 2000, ContextTokenNS: 2, StateBandwidthGBs: 4300},
		Checks:   Checks{Keep: 5, MaxMemoryGiB: DefaultMaxMemoryGiB},
		Workload: workload.Spec{PromptLen: workload.Dist{Kind: "constant", Value: 512}, OutputLen: workload.Dist{Kind: "constant", Value: 128}},
	}
}

// FieldError is a validation error for one field path.
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Msg }

func fe(path, format string, a ...any) error {
	return &FieldError{Path: path, Msg: fmt.Sprintf(format, a...)}
}

// maxTokens bounds token counts (max_model_len, the step budget), as the
// trace readers do: int32, far above any model's context.
const maxTokens = 1<<31 - 1

// Validate checks ranges and cross-field consistency.
func (s *Scenario) Validate() error {
	if err := s.validateModelSource(); err != nil {
		return err
	}
	if err := s.Model.Shape.Validate(); err != nil {
		return fieldErr("model.", err)
	}
	e := &s.Engine
	if e.MaxNumBatchedTokens < 1 {
		return fe("engine.max_num_batched_tokens", "must be >= 1, got %d", e.MaxNumBatchedTokens)
	}
	if e.MaxNumSeqs < 1 {
		return fe("engine.max_num_seqs", "must be >= 1, got %d", e.MaxNumSeqs)
	}
	if e.MaxModelLen < 2 || e.MaxModelLen > maxTokens {
		return fe("engine.max_model_len", "must be in [2, %d], got %d", maxTokens, e.MaxModelLen)
	}
	if e.MaxNumBatchedTokens > maxTokens {
		return fe("engine.max_num_batched_tokens", "must be <= %d, got %d", maxTokens, e.MaxNumBatchedTokens)
	}
	if e.MaxNumSeqs > workload.MaxGroup {
		return fe("engine.max_num_seqs", "must be <= %d, got %d", workload.MaxGroup, e.MaxNumSeqs)
	}
	if e.BlockSize < 1 || e.BlockSize > 4096 {
		return fe("engine.block_size", "must be in [1, 4096], got %d", e.BlockSize)
	}
	if !(e.GPUMemoryUtilization > 0 && e.GPUMemoryUtilization <= 1) {
		return fe("engine.gpu_memory_utilization", "must be in (0, 1], got %g", e.GPUMemoryUtilization)
	}
	if e.NumGPUBlocksOverride < 0 || e.NumGPUBlocksOverride == 1 || e.NumGPUBlocksOverride > 1<<28 {
		return fe("engine.num_gpu_blocks_override", "must be 0 (off) or in [2, 2^28], got %d", e.NumGPUBlocksOverride)
	}
	if e.LongPrefillTokenThreshold < 0 {
		return fe("engine.long_prefill_token_threshold", "must be >= 0, got %d", e.LongPrefillTokenThreshold)
	}
	if e.SchedulingPolicy != "fcfs" && e.SchedulingPolicy != "priority" {
		return fe("engine.scheduling_policy", "unknown %q (want fcfs or priority)", e.SchedulingPolicy)
	}
	if e.StateIndexBits < MinStateIndexBits || e.StateIndexBits > MaxStateIndexBits {
		return fe("engine.state_index_bits", "must be in [%d, %d] %s, got %d", MinStateIndexBits, MaxStateIndexBits, StateIndexBitsNote, e.StateIndexBits)
	}
	if err := s.validateCacheArgs(); err != nil {
		return err
	}
	if e.MambaBlockSize < 0 || e.MambaBlockSize > e.MaxModelLen {
		return fe("engine.mamba_block_size", "must be in [0, max_model_len %d] (0: the model's), got %d", e.MaxModelLen, e.MambaBlockSize)
	}
	if e.PrefixMatchUnit < 0 || e.PrefixMatchUnit > maxTokens {
		return fe("engine.prefix_match_unit", "must be in [1, %d] tokens, or 0 (unset: the gcd of the KV cache groups' block sizes), got %d", maxTokens, e.PrefixMatchUnit)
	}
	if e.NumGPUBlocksOverride == 0 {
		if !(s.Device.MemoryGiB > 0) {
			return fe("device.memory_gib", "must be > 0, got %g", s.Device.MemoryGiB)
		}
		if s.Device.ActivationGiB < 0 {
			return fe("device.activation_gib", "must be >= 0, got %g", s.Device.ActivationGiB)
		}
	}
	if err := s.Workload.Validate(); err != nil {
		return fieldErr("workload.", err)
	}
	if m := s.Workload.MaxSequence(); m > int64(e.MaxModelLen) {
		return fe("engine.max_model_len", "%d is less than the longest prompt + output the workload can draw (%d)", e.MaxModelLen, m)
	}
	if (!e.EnableChunkedPrefill || e.VLLMVersion == "v0") && s.Workload.Kind != "trace" && s.Workload.Kind != "synthetic" {
		// vLLM refuses this set-up at start-up; here a whole prompt (or a
		// preempted request's prompt + output) that can never fit the
		// budget would stall the engine.
		if m := s.Workload.MaxSequence(); m > int64(e.MaxNumBatchedTokens) {
			return fe("engine.max_num_batched_tokens", "%d is less than the longest prompt + output the workload can draw (%d); without chunked prefill (or under v0) a whole prompt must fit one step", e.MaxNumBatchedTokens, m)
		}
	}
	if s.Sampling.Temperature < 0 {
		return fe("sampling.temperature", "must be >= 0, got %g", s.Sampling.Temperature)
	}
	switch s.Backend.Kind {
	case "symbolic", "mock", "cuda":
	default:
		return fe("backend.kind", "unknown %q (want symbolic, mock or cuda)", s.Backend.Kind)
	}
	if s.Backend.Shadow && s.Backend.Kind != "cuda" {
		return fe("backend.shadow", "only the cuda backend runs a shadow (the mock engine beside it), not %s", s.Backend.Kind)
	}
	if !(s.Backend.DivergenceThreshold > 0) {
		return fe("backend.divergence_threshold", "must be > 0, got %g", s.Backend.DivergenceThreshold)
	}
	t := &s.Timing
	for _, f := range []struct {
		n string
		v float64
	}{{"step_overhead_us", t.StepOverheadUS}, {"prefill_token_ns", t.PrefillTokenNS}, {"decode_row_ns", t.DecodeRowNS}, {"context_token_ns", t.ContextTokenNS}, {"host_step_us", t.HostStepUS}} {
		if f.v < 0 {
			return fe("timing."+f.n, "must be >= 0, got %g", f.v)
		}
	}
	for _, f := range []struct {
		n   string
		v   float64
		max float64
	}{{"step_overhead_us", t.StepOverheadUS, 1e9}, {"prefill_token_ns", t.PrefillTokenNS, 1e9}, {"decode_row_ns", t.DecodeRowNS, 1e9}, {"context_token_ns", t.ContextTokenNS, 1e9}, {"host_step_us", t.HostStepUS, 1e9}} {
		// Beyond these a step lasts years and a run leaves the int64 ns clock.
		if f.v > f.max {
			return fe("timing."+f.n, "must be <= %g, got %g", f.max, f.v)
		}
	}
	if !(t.StateBandwidthGBs > 0) {
		return fe("timing.state_bandwidth_gbs", "must be > 0, got %g", t.StateBandwidthGBs)
	}
	if t.StepOverheadUS == 0 && t.PrefillTokenNS == 0 && t.DecodeRowNS == 0 {
		return fe("timing", "a step must take time: set step_overhead_us, prefill_token_ns or decode_row_ns")
	}
	if s.Checks.Keep < 0 {
		return fe("checks.keep", "must be >= 0, got %d", s.Checks.Keep)
	}
	if s.Checks.MaxSteps < 0 {
		return fe("checks.max_steps", "must be >= 0 (0: scale with the workload), got %d", s.Checks.MaxSteps)
	}
	if !(s.Checks.MaxMemoryGiB >= 0) {
		return fe("checks.max_memory_gib", "must be > 0 (0: the default, %d), got %g", DefaultMaxMemoryGiB, s.Checks.MaxMemoryGiB)
	}
	return nil
}

// fieldErr prefixes a "field: problem" error from a sub-validator.
func fieldErr(prefix string, err error) error {
	if w, ok := err.(*workload.FieldError); ok {
		return &FieldError{Path: prefix + w.Path, Msg: w.Err.Error()}
	}
	m := err.Error()
	for i := 0; i+1 < len(m); i++ {
		if m[i] == ':' && m[i+1] == ' ' {
			return &FieldError{Path: prefix + m[:i], Msg: m[i+2:]}
		}
	}
	return &FieldError{Path: prefix[:len(prefix)-1], Msg: m}
}
