package scenarios

import (
	"fmt"

	"statesim/model"
	"statesim/sched"
	"statesim/statecache"
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
	// hit. Left out, it takes vLLM's default (PrefixCachingDefault).
	EnablePrefixCaching bool `yaml:"enable_prefix_caching" json:"enable_prefix_caching"`
	// MambaCacheMode is vLLM's mamba_cache_mode (none, align, all; left
	// out: the release's choice, MambaMode); MambaBlockSize its block size
	// (0: block_size, the only size modelled: page unification).
	MambaCacheMode string `yaml:"mamba_cache_mode" json:"mamba_cache_mode,omitempty"`
	MambaBlockSize int    `yaml:"mamba_block_size" json:"mamba_block_size,omitempty"`
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
}

// Speculative is speculative_config plus the acceptance model that stands
// in for the rejection sampler: accepted (a fixed count per decode row)
// or acceptance_rate (each draft in turn accepted with that probability
// until the first rejection), drawn from the scenario's "spec" stream.
type Speculative struct {
	// Method: mtp, eagle or ngram; empty: speculative decoding off.
	Method               string `yaml:"method" json:"method,omitempty"`
	NumSpeculativeTokens int    `yaml:"num_speculative_tokens" json:"num_speculative_tokens,omitempty"`
	// Accepted >= 0 fixes the accepted drafts per row (capped at the
	// drafts scheduled); -1 (the default) draws with AcceptanceRate.
	Accepted       int     `yaml:"accepted" json:"accepted,omitempty"`
	AcceptanceRate float64 `yaml:"acceptance_rate" json:"acceptance_rate,omitempty"`
}

// maxSpecTokens bounds num_speculative_tokens (vLLM allows more; the
// 1 + K state columns make every Mamba group that many blocks wide).
const maxSpecTokens = 16

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
	v, err := sched.ParseVersion(e.VLLMVersion)
	if err != nil {
		return fe("engine.vllm_version", "%v", err)
	}
	if _, err := sched.Patched(v, e.Patches); err != nil {
		return fe("engine.patches", "%v", err)
	}
	if err := s.validateServed(); err != nil {
		return err
	}
	if _, err := sched.ParseCUDAGraphMode(e.CUDAGraphMode); err != nil {
		return fe("engine.cudagraph_mode", "%v", err)
	}
	if e.ModelRunner != "" {
		if _, err := sched.ParseRunner(e.ModelRunner); err != nil {
			return fe("engine.model_runner", "%v", err)
		}
		if v == sched.V0 {
			return fe("engine.model_runner", "the v0 control has no V1 engine model runner")
		}
	}
	if err := s.validateSpeculative(); err != nil {
		return err
	}
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
	if e.StateIndexBits < 16 || e.StateIndexBits > 64 {
		return fe("engine.state_index_bits", "must be in [16, 64] (32 = vLLM before PR #35275, 64 = fixed), got %d", e.StateIndexBits)
	}
	if err := s.validateCacheArgs(); err != nil {
		return err
	}
	if err := s.validatePrefixCaching(); err != nil {
		return err
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
	if e.AsyncScheduling {
		if v, _ := sched.ParseVersion(e.VLLMVersion); v == sched.V0 {
			return fe("engine.async_scheduling", "the v0 control has no async scheduler")
		}
		if numericBackend(s.Backend.Kind) {
			// Its model runner samples each step's tokens when the step
			// runs; the one-step-ahead order is modelled for cache
			// accesses only.
			return fe("engine.async_scheduling", "the %s backend does not model async scheduling: use backend.kind symbolic", s.Backend.Kind)
		}
	}
	if !(s.Backend.DivergenceThreshold > 0) {
		return fe("backend.divergence_threshold", "must be > 0, got %g", s.Backend.DivergenceThreshold)
	}
	t := &s.Timing
	for _, f := range []struct {
		n string
		v float64
	}{{"step_overhead_us", t.StepOverheadUS}, {"prefill_token_ns", t.PrefillTokenNS}, {"decode_row_ns", t.DecodeRowNS}, {"context_token_ns", t.ContextTokenNS}} {
		if f.v < 0 {
			return fe("timing."+f.n, "must be >= 0, got %g", f.v)
		}
	}
	for _, f := range []struct {
		n   string
		v   float64
		max float64
	}{{"step_overhead_us", t.StepOverheadUS, 1e9}, {"prefill_token_ns", t.PrefillTokenNS, 1e9}, {"decode_row_ns", t.DecodeRowNS, 1e9}, {"context_token_ns", t.ContextTokenNS, 1e9}} {
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

// PrefixCachingDefault is enable_prefix_caching's default for s's model
// and version, as vLLM resolves it where statesim models it: on for
// attention-only models under V1 (V1's default since it became the default
// engine in v0.8.0; EngineArgs leaves it None and V1 turns it on); for
// hybrids off before PR #50991 and on from the release that shipped it
// (v0.28), with mamba_cache_mode align (MambaMode); off under V0 (its
// default), for models without attention layers (statesim's prefix cache
// needs an attention group) and for the numeric backends (mock, cuda),
// which do not model shared KV blocks.
func (s *Scenario) PrefixCachingDefault() bool {
	if s.Engine.VLLMVersion == "v0" || numericBackend(s.Backend.Kind) {
		return false
	}
	sh := &s.Model.Shape
	if sh.NumMambaLayers() == 0 {
		return true
	}
	if sh.NumAttentionLayers() == 0 || !s.Engine.EnableChunkedPrefill || s.alignLayout().BlockSize > s.Engine.MaxNumBatchedTokens {
		// The default align would be refused at start-up (it needs
		// chunked prefill and a block within the step budget, #34445):
		// statesim keeps caching off instead.
		return false
	}
	if sp := s.Spec(); sp.On() {
		return false // align's speculative blocks are not modelled: a known gap
	}
	r, ok := s.Release()
	return ok && r.AtLeast(statecache.Release{Major: 0, Minor: 28})
}

// Release is vllm_version as a release (the fixed alias is its newest);
// false for the v0 control.
func (s *Scenario) Release() (statecache.Release, bool) {
	if s.Engine.VLLMVersion == "v0" {
		return statecache.Release{}, false
	}
	if r, err := statecache.ParseRelease(s.Engine.VLLMVersion); err == nil {
		return r, true
	}
	r, err := statecache.ParseRelease(s.Version().Release().String())
	return r, err == nil
}

// MambaMode is how vLLM settles prefix caching and the Mamba cache mode
// for s's hybrid model (statecache.ResolveMambaCacheMode): whether prefix
// caching stays on and in which mode. A model without Mamba layers gets
// enable_prefix_caching as given, in mode none.
func (s *Scenario) MambaMode() (statecache.ResolvedMambaMode, error) {
	if s.Model.Shape.NumMambaLayers() == 0 {
		return statecache.ResolvedMambaMode{PrefixCaching: s.Engine.EnablePrefixCaching, Mode: statecache.MambaNone}, nil
	}
	r, ok := s.Release()
	if !ok {
		if s.Engine.MambaCacheMode != "" && s.Engine.MambaCacheMode != "none" {
			return statecache.ResolvedMambaMode{}, fmt.Errorf("the v0 engine has no mamba_cache_mode")
		}
		return statecache.ResolvedMambaMode{PrefixCaching: s.Engine.EnablePrefixCaching}, nil
	}
	pc := s.Engine.EnablePrefixCaching
	return statecache.ResolveMambaCacheMode(statecache.MambaModeConfig{
		Release: r, PrefixCaching: &pc, Requested: s.Engine.MambaCacheMode,
		SupportsAll:      statecache.SupportsMambaPrefixCaching(s.Model.Shape.StateKind()),
		NoChunkedPrefill: !s.Engine.EnableChunkedPrefill, SpecDecode: s.Spec().K > 0,
	})
}

// validatePrefixCaching refuses what prefix caching is not modelled for,
// and the Mamba cache mode vLLM would refuse.
func (s *Scenario) validatePrefixCaching() error {
	e := &s.Engine
	if _, err := statecache.ParseMambaCacheMode(e.MambaCacheMode); err != nil {
		return fe("engine.mamba_cache_mode", "%v", err)
	}
	res, err := s.MambaMode()
	if err != nil {
		return fe("engine.mamba_cache_mode", "%v", err)
	}
	if e.MambaBlockSize < 0 || e.MambaBlockSize > e.MaxModelLen {
		return fe("engine.mamba_block_size", "must be in [0, max_model_len %d] (0: the model's), got %d", e.MaxModelLen, e.MambaBlockSize)
	}
	// The layout's block size: a hybrid's attention block grows until its
	// page holds a state (page unification), and the Mamba groups share it.
	bs := s.Layout().BlockSize
	switch {
	case res.PrefixCaching && res.Mode == statecache.MambaAll:
		// mamba_block_size is the chunk the block rounds to (model.Unify).
	case e.MambaBlockSize != 0 && e.MambaBlockSize != bs:
		return fe("engine.mamba_block_size", "must be 0 or the unified block size (%d for block_size %d), got %d: statesim gives every KV cache group one block size (vLLM's page unification)", bs, e.BlockSize, e.MambaBlockSize)
	}
	if !res.PrefixCaching {
		return nil
	}
	const f = "engine.enable_prefix_caching"
	switch {
	case s.Engine.VLLMVersion == "v0":
		return fe(f, "not modelled for the v0 engine")
	case numericBackend(s.Backend.Kind):
		return fe(f, "the %s backend does not model shared KV blocks: use backend.kind symbolic", s.Backend.Kind)
	case s.Model.Shape.NumAttentionLayers() == 0:
		return fe(f, "a model without attention layers: statesim's prefix cache needs an attention group")
	}
	if res.Mode == statecache.MambaAll && s.Spec().K > 0 {
		return fe(f, "%s", statecache.ErrSpecMambaPrefixCaching)
	}
	if res.Mode == statecache.MambaAlign {
		if err := sched.CheckMambaAlignBudget(bs, e.MaxNumBatchedTokens); err != nil {
			return fe("engine.max_num_batched_tokens", "%v", err)
		}
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

// kimiK3Release is the first release that serves Kimi-K3: v0.27.0
// (2026-08-10) lists its model files and kernels (#50089, #50000).
var kimiK3Release = statecache.Release{Major: 0, Minor: 27}

// validateServed refuses a model the release does not serve (Serves).
func (s *Scenario) validateServed() error {
	if err := Serves(&s.Model.Shape, s.Engine.VLLMVersion); err != nil {
		return fe("engine.vllm_version", "%v", err)
	}
	return nil
}

// Serves reports whether vLLM release version (a vllm_version value)
// serves the model: Kimi-K3 (KDA layers with a full-rank gate,
// vllm/models/kimi_k3) only from v0.27; every other model statesim
// derives in every release it models.
func Serves(sh *model.Shape, version string) error {
	if !sh.Mixer.FullRankGate {
		return nil
	}
	sc := Scenario{Engine: Engine{VLLMVersion: version}}
	if r, ok := sc.Release(); !ok || !r.AtLeast(kimiK3Release) {
		return fmt.Errorf("vLLM %s does not serve Kimi-K3 (%s): its model files came with #50089, first in %s.0", version, sh.Name, kimiK3Release)
	}
	return nil
}

// Version is the parsed vllm_version (valid after Validate).
func (s *Scenario) Version() sched.Version {
	v, _ := sched.ParseVersion(s.Engine.VLLMVersion)
	if w, err := sched.Patched(v, s.Engine.Patches); err == nil {
		return w
	}
	return v
}

// validateSpeculative checks engine.speculative.
func (s *Scenario) validateSpeculative() error {
	sp := &s.Engine.Speculative
	const f = "engine.speculative."
	if _, err := sched.ParseSpecMethod(sp.Method); err != nil {
		return fe(f+"method", "%v", err)
	}
	if sp.Method == "" {
		if sp.NumSpeculativeTokens != 0 {
			return fe(f+"method", "num_speculative_tokens is %d but no method is set (mtp, eagle or ngram)", sp.NumSpeculativeTokens)
		}
		return nil
	}
	if sp.NumSpeculativeTokens < 1 || sp.NumSpeculativeTokens > maxSpecTokens {
		return fe(f+"num_speculative_tokens", "must be in [1, %d] with method %s, got %d", maxSpecTokens, sp.Method, sp.NumSpeculativeTokens)
	}
	if sp.Accepted < -1 {
		return fe(f+"accepted", "must be >= 0 (a fixed count) or -1 (draw with acceptance_rate), got %d", sp.Accepted)
	}
	if !(sp.AcceptanceRate >= 0 && sp.AcceptanceRate <= 1) {
		return fe(f+"acceptance_rate", "must be in [0, 1], got %g", sp.AcceptanceRate)
	}
	e := &s.Engine
	switch {
	case e.VLLMVersion == "v0":
		return fe(f+"method", "speculative decoding is modelled for V1 releases, not the v0 control")
	case e.StateIndexBits != 64:
		return fe(f+"method", "speculative decoding with state_index_bits %d (bug B's wrap) is not modelled: use 64", e.StateIndexBits)
	case e.ForcePrefillPath:
		return fe(f+"method", "force_prefill_path with speculative decoding is not modelled")
	}
	return nil
}

// Spec is the parsed speculative config (valid after Validate); its Rand
// is left for the engine to seed.
func (s *Scenario) Spec() sched.Spec {
	sp := &s.Engine.Speculative
	m, _ := sched.ParseSpecMethod(sp.Method)
	if m == sched.SpecOff {
		return sched.Spec{}
	}
	return sched.Spec{Method: m, K: sp.NumSpeculativeTokens, Accept: sched.Acceptance{Fixed: sp.Accepted, Rate: sp.AcceptanceRate}}
}

// Layout is the KV cache layout the scenario's model gets, the drafter's
// attention layers included (model.Shape.LayoutWithDrafter): with EAGLE or
// MTP they join the target's attention bucket. Without them it is the
// shape's own layout.
//
// In mamba_cache_mode all the block is a multiple of the Mamba kernel's
// chunk (model.Unify), so the mode is resolved first.
func (s *Scenario) Layout() model.Layout {
	sh := s.Model.Shape
	if res, err := s.MambaMode(); err == nil && res.PrefixCaching && res.Mode == statecache.MambaAll {
		sh.Cache.MambaCacheMode, sh.Cache.MambaBlockSize = "all", s.Engine.MambaBlockSize
	}
	return s.layoutOf(&sh)
}

// alignLayout is the layout in modes none and align, whatever the mode.
func (s *Scenario) alignLayout() model.Layout { return s.layoutOf(&s.Model.Shape) }

func (s *Scenario) layoutOf(sh *model.Shape) model.Layout {
	sp := s.Spec()
	return sh.LayoutWithDrafter(s.Engine.BlockSize, sp.DraftLayers())
}

// ModelRunner is the model runner the scenario runs (valid after
// Validate): engine.model_runner, or the release's default, Model Runner
// V2 from v0.29.0 (#53183), V1 before and for the v0 control.
func (s *Scenario) ModelRunner() sched.Runner {
	if s.Engine.ModelRunner != "" {
		r, _ := sched.ParseRunner(s.Engine.ModelRunner)
		return r
	}
	if r, ok := s.Release(); ok && r.AtLeast(statecache.Release{Major: 0, Minor: 29}) {
		return sched.RunnerV2
	}
	return sched.RunnerV1
}

// GuardIgnored reports a scenario whose engine.patches add #53059 under
// Model Runner V2, where the PR's edit (GPUModelRunner._is_uniform_decode)
// is not on the dispatch path: the patch changes nothing there.
func (s *Scenario) GuardIgnored() bool {
	b := s.Version().Behaviour()
	return b.GraphGuard && !b.GuardApplies(s.ModelRunner())
}

// CUDAGraphMode is the parsed cudagraph_mode (valid after Validate).
func (s *Scenario) CUDAGraphMode() sched.CUDAGraphMode {
	m, _ := sched.ParseCUDAGraphMode(s.Engine.CUDAGraphMode)
	return m
}
