package setup

import (
	"fmt"
	"strings"

	"statesim/model"
	"statesim/scenarios"
	"statesim/sched"
	"statesim/statecache"
)

// maxSpecTokens bounds num_speculative_tokens (vLLM allows more; the
// 1 + K state columns make every Mamba group that many blocks wide).
const maxSpecTokens = 16

// kimiK3Release is the first release that serves Kimi-K3: v0.27.0
// (2026-08-10) lists its model files and kernels (#50089, #50000).
var kimiK3Release = statecache.Release{Major: 0, Minor: 27}

// runnerV2Release: Model Runner V2 is the default from v0.29.0 (#53183).
var runnerV2Release = statecache.Release{Major: 0, Minor: 29}

// parsed, when set (tests), hears each parse and derivation this package
// makes: what a run settles, counted.
var parsed func(what string)

func count(what string) {
	if parsed != nil {
		parsed(what)
	}
}

// resolver settles one scenario; src locates its errors (nil for a
// scenario built in code).
type resolver struct {
	sc  *scenarios.Scenario
	src *scenarios.Source
	st  *Setup
	// v0: vllm_version is the v0 control.
	v0 bool
}

// fail is a problem with the field at path, where the scenario gave it.
func (r *resolver) fail(path, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if r.src != nil {
		return r.src.At(path, msg)
	}
	return &scenarios.InputError{File: r.sc.File, Path: path, Msg: msg}
}

func resolve(sc *scenarios.Scenario, src *scenarios.Source) (*Setup, error) {
	r := &resolver{sc: sc, src: src, st: &Setup{Scenario: sc, Shape: sc.Model.Shape}}
	for _, step := range []func() error{r.version, r.served, r.graphs, r.runner, r.spec, r.release, r.async, r.mamba, r.draftCache, r.connector} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := r.groups(); err != nil {
		return nil, err
	}
	r.derive()
	r.st.Warnings = r.st.warnings()
	return r.st, nil
}

// version parses vllm_version and its patches, once.
func (r *resolver) version() error {
	e, st := &r.sc.Engine, r.st
	count("vllm_version")
	v, err := sched.ParseVersion(e.VLLMVersion)
	if err != nil {
		return r.fail("engine.vllm_version", "%v", err)
	}
	if st.Version, err = sched.Patched(v, e.Patches); err != nil {
		return r.fail("engine.patches", "%v", err)
	}
	if r.v0 = v == sched.V0; r.v0 {
		return nil
	}
	st.V1 = true
	if st.Release, err = statecache.ParseRelease(e.VLLMVersion); err != nil {
		// An alias (fixed): the release it stands for.
		st.Release, err = statecache.ParseRelease(v.Release().String())
		st.V1 = err == nil
	}
	return nil
}

// connector settles engine.kv_transfer_config: refused on the v0
// control, and where vLLM cannot run it on the model.
func (r *resolver) connector() error {
	const f = "engine.kv_transfer_config.kv_connector"
	c, err := sched.ParseConnector(r.sc.Engine.KVTransferConfig.KVConnector)
	switch {
	case err != nil:
		return r.fail(f, "%v", err)
	case c == sched.ConnectorNone:
		return nil
	case r.v0:
		return r.fail(f, "KV connectors are modelled for V1 releases, not the v0 control")
	case !c.SupportsHMA() && r.st.Layout.NumMambaGroups() > 0:
		// vllm/config/vllm.py @ 6adad0876: a connector without SupportsHMA
		// turns the hybrid KV cache manager off, which Mamba hybrids need.
		return r.fail(f, "%s does not support the hybrid KV cache manager (SupportsHMA), which vLLM turns off for it; a Mamba hybrid (%s) then fails at start-up", c, r.sc.Model.Shape.Name)
	}
	r.st.Connector = c
	return nil
}

// served refuses a model the release does not serve (Serves).
func (r *resolver) served() error {
	if err := Serves(&r.sc.Model.Shape, r.sc.Engine.VLLMVersion, r.st.Release, r.st.V1); err != nil {
		return r.fail("engine.vllm_version", "%v", err)
	}
	return nil
}

// Serves reports whether vLLM release rel (vllm_version version; v1
// false for the v0 control) serves the model: Kimi-K3 (KDA layers with a
// full-rank gate, vllm/models/kimi_k3) only from v0.27; every other model
// statesim derives in every release it models.
func Serves(sh *model.Shape, version string, rel statecache.Release, v1 bool) error {
	switch {
	case sh.Mixer.FullRankGate && !(v1 && rel.AtLeast(kimiK3Release)):
		return fmt.Errorf("vLLM %s does not serve Kimi-K3 (%s): its model files came with #50089, first in %s.0", version, sh.Name, kimiK3Release)
	case strings.HasPrefix(sh.ModelType, "qwen3_5") && !(v1 && rel.AtLeast(qwen35Release)):
		return fmt.Errorf("vLLM %s does not serve Qwen3.5 (%s): its model file came with #34110 (merged 2026-02-09), first in %s here", version, sh.Name, qwen35Release)
	}
	return nil
}

// qwen35Release is the first release statesim models that serves
// Qwen3.5: its model file came with #34110 (9562912ce, merged
// 2026-02-09, after v0.14).
var qwen35Release = statecache.Release{Major: 0, Minor: 19}

// release applies what the release and K decide in the shape's cache
// arguments (model.Shape.ApplyRelease: the config hooks, the dtype and
// conv-width rules), before any layout is built; the v0 control keeps the
// flags as given.
func (r *resolver) release() error {
	minor := 0
	if r.st.V1 {
		minor = r.st.Release.Minor
	}
	applyRelease(&r.sc.Model.Shape, minor, r.st.Spec.K)
	r.st.Shape = r.sc.Model.Shape
	return nil
}

func applyRelease(sh *model.Shape, minor, k int) {
	sh.Cache.NumSpeculativeTokens = k
	sh.ApplyRelease(minor)
}

// ApplyRelease is the release step for a shape laid out outside a
// scenario (prop's pool sizing): vllm_version and K as given alone.
func ApplyRelease(sh *model.Shape, version string, k int) {
	r := &resolver{sc: &scenarios.Scenario{Engine: scenarios.Engine{VLLMVersion: version}}, st: &Setup{}}
	minor := 0
	if r.version() == nil && r.st.V1 {
		minor = r.st.Release.Minor
	}
	applyRelease(sh, minor, k)
}

func (r *resolver) graphs() error {
	m, err := sched.ParseCUDAGraphMode(r.sc.Engine.CUDAGraphMode)
	if err != nil {
		return r.fail("engine.cudagraph_mode", "%v", err)
	}
	r.st.CUDAGraphs = m
	return nil
}

// runner is engine.model_runner, or the release's default: Model Runner
// V2 from v0.29.0 (#53183), V1 before and for the v0 control.
func (r *resolver) runner() error {
	e, st := &r.sc.Engine, r.st
	st.Runner = sched.RunnerV1
	if st.V1 && st.Release.AtLeast(runnerV2Release) {
		st.Runner = sched.RunnerV2
	}
	if e.ModelRunner != "" {
		var err error
		if st.Runner, err = sched.ParseRunner(e.ModelRunner); err != nil {
			return r.fail("engine.model_runner", "%v", err)
		}
		if r.v0 {
			return r.fail("engine.model_runner", "the v0 control has no V1 engine model runner")
		}
	}
	b := st.Version.Behaviour()
	st.GuardIgnored = b.GraphGuard && !b.GuardApplies(st.Runner)
	return nil
}

// spec checks engine.speculative and settles it.
func (r *resolver) spec() error {
	e := &r.sc.Engine
	sp := &e.Speculative
	const f = "engine.speculative."
	m, err := sched.ParseSpecMethod(sp.Method)
	if err != nil {
		return r.fail(f+"method", "%v", err)
	}
	if sp.Method == "" {
		if sp.NumSpeculativeTokens != 0 {
			return r.fail(f+"method", "num_speculative_tokens is %d but no method is set (mtp, eagle or ngram)", sp.NumSpeculativeTokens)
		}
		if sp.AcceptanceRate != 0 {
			return r.fail(f+"acceptance_rate", "applies only with a speculative method (engine.speculative.method: mtp, eagle or ngram)")
		}
		return nil
	}
	if sp.NumSpeculativeTokens < 1 || sp.NumSpeculativeTokens > maxSpecTokens {
		return r.fail(f+"num_speculative_tokens", "must be in [1, %d] with method %s, got %d", maxSpecTokens, sp.Method, sp.NumSpeculativeTokens)
	}
	if sp.Accepted < -1 {
		return r.fail(f+"accepted", "must be >= 0 (a fixed count) or -1 (draw with acceptance_rate), got %d", sp.Accepted)
	}
	if !(sp.AcceptanceRate >= 0 && sp.AcceptanceRate <= 1) {
		return r.fail(f+"acceptance_rate", "must be in [0, 1], got %g", sp.AcceptanceRate)
	}
	switch {
	case r.v0:
		return r.fail(f+"method", "speculative decoding is modelled for V1 releases, not the v0 control")
	case e.StateIndexBits != 64:
		return r.fail(f+"method", "speculative decoding with state_index_bits %d (bug B's wrap) is not modelled: use 64", e.StateIndexBits)
	case e.ForcePrefillPath:
		return r.fail(f+"method", "force_prefill_path with speculative decoding is not modelled")
	}
	if err := r.draft(m); err != nil {
		return err
	}
	if m != sched.SpecOff {
		r.st.Spec = sched.Spec{Method: m, K: sp.NumSpeculativeTokens, Accept: sched.Acceptance{Fixed: sp.Accepted, Rate: sp.AcceptanceRate}}
	}
	return nil
}

// draftCache refuses a DFlash drafter's window groups without prefix
// caching in align mode: the KV cache manager drives groups of their own
// block size there only (statecache.KVCacheManager.addWindow).
func (r *resolver) draftCache() error {
	switch {
	case r.st.Draft.NumLayers == 0:
		return nil
	case !(r.st.Mamba.PrefixCaching && (r.st.Mamba.Mode == statecache.MambaAlign || r.st.Layout.NumMambaGroups() == 0)):
		return r.fail("engine.enable_prefix_caching", "a DFlash drafter's sliding-window groups are modelled with prefix caching in align mode only (vLLM runs them without it too)")
	case r.sc.Engine.AsyncScheduling:
		// remove_skipped_blocks takes the processed tokens, computed less
		// those in flight (#47728), which the window groups do not track.
		return r.fail("engine.async_scheduling", "a DFlash drafter's sliding-window groups under async scheduling are not modelled (they free by processed tokens, #47728)")
	}
	return nil
}

// draft settles engine.speculative.draft, the DFlash drafter's layers:
// required with method dflash, refused with any other. Only drafters
// whose layers are all sliding-window are modelled, from the v0.28 row
// (#42890, merged 2026-07-03, gives their spec the kernel block; the
// v0.22 row stands for v0.22–v0.27), under Model Runner V2 (the V1
// runner's reorder threshold for the drafter's backend was not read).
func (r *resolver) draft(m sched.SpecMethod) error {
	d := &r.sc.Engine.Speculative.Draft
	const f = "engine.speculative.draft"
	if m != sched.SpecDFlash {
		if *d != (scenarios.DraftConfig{}) {
			return r.fail(f, "applies only with method dflash (the other methods' drafters share the target's attention spec)")
		}
		return nil
	}
	switch {
	case d.NumHiddenLayers <= 0 || d.NumKeyValueHeads <= 0 || d.HeadDim <= 0:
		return r.fail(f, "method dflash needs the drafter's num_hidden_layers, num_key_value_heads and head_dim (its config.json)")
	case d.SlidingWindow <= 0:
		return r.fail(f+".sliding_window", "only sliding-window DFlash drafters are modelled (a full-attention drafter's layers with the target's spec join its group; with another spec they form a group statesim does not build)")
	case d.KernelBlockSize < 0:
		return r.fail(f+".kernel_block_size", "must be >= 0 (0: 16, FlashAttention's), got %d", d.KernelBlockSize)
	case !r.st.V1 || !r.st.Version.Since(sched.V028):
		return r.fail("engine.speculative.method", "a sliding-window DFlash drafter is modelled from the v0.28 row (#42890 gives its spec the kernel block), not %s", r.sc.Engine.VLLMVersion)
	case r.st.Runner != sched.RunnerV2:
		return r.fail("engine.speculative.method", "dflash under Model Runner V1 is not modelled (the reorder threshold of the drafter's backend was not read): use engine.model_runner v2")
	}
	r.st.Draft = d.Window()
	return nil
}

// async refuses async scheduling where it is not modelled.
func (r *resolver) async() error {
	if !r.sc.Engine.AsyncScheduling {
		return nil
	}
	if r.v0 {
		return r.fail("engine.async_scheduling", "the v0 control has no async scheduler")
	}
	if k := r.sc.Backend.Kind; scenarios.NumericBackend(k) && k != "mock" {
		// The mock samples when a step runs and hands the tokens over
		// when the scheduler applies them (mock.Config.AsyncScheduling);
		// the GPU backend's runner does not.
		return r.fail("engine.async_scheduling", "the %s backend does not model async scheduling: use backend.kind symbolic or mock", k)
	}
	return nil
}

// layout builds the KV cache layout for sh, the drafter's attention
// layers included (model.Shape.LayoutWithDrafter; a DFlash drafter's
// sliding-window layers in groups of their own, LayoutWithDraftWindow).
func (r *resolver) layout(sh *model.Shape) (model.Layout, error) {
	count("layout")
	if r.st.Draft.NumLayers > 0 {
		l, err := sh.LayoutWithDraftWindow(r.sc.Engine.BlockSize, r.st.Draft)
		if err != nil {
			return l, r.fail("engine.speculative.draft", "%v", err)
		}
		return l, nil
	}
	return sh.LayoutWithDrafter(r.sc.Engine.BlockSize, r.st.Spec.DraftLayers()), nil
}

// ServedBy is Serves for a vllm_version value given alone (a flag's).
func ServedBy(sh *model.Shape, version string) error {
	r := &resolver{sc: &scenarios.Scenario{Engine: scenarios.Engine{VLLMVersion: version}}, st: &Setup{}}
	if err := r.version(); err != nil {
		return err
	}
	return Serves(sh, version, r.st.Release, r.st.V1)
}

// GuardIgnored is Setup.GuardIgnored for a vllm_version, model_runner
// and patches given alone (flags).
func GuardIgnored(version, runner string, patches []string) (bool, error) {
	sc := &scenarios.Scenario{Engine: scenarios.Engine{VLLMVersion: version, ModelRunner: runner, Patches: patches}}
	r := &resolver{sc: sc, st: &Setup{Scenario: sc}}
	for _, step := range []func() error{r.version, r.runner} {
		if err := step(); err != nil {
			return false, err
		}
	}
	return r.st.GuardIgnored, nil
}
