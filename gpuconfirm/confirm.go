//go:build cuda

package gpuconfirm

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"statesim/backend/cuda"
	"statesim/engine"
	"statesim/kernels"
	"statesim/scenarios"
)

// Options are gpu-confirm's flags.
type Options struct {
	// BugBTokens is the bug-B prefill's prompt length.
	BugBTokens int
	// Log receives one line per experiment as it finishes.
	Log io.Writer
}

// Tolerance bounds |Δ log-prob| between the GPU and the CPU (reference and
// mock engine): the kernels sum in another order than the Go code.
const Tolerance = 1e-3

// tiny shrinks a built-in scenario to the tiny hybrid model on a small
// pool, where the mock's CPU reference stays fast, on the cuda backend
// with the mock engine in its shadow; the workload keys depend on the
// scenario's workload kind.
var tiny = []string{
	"model.preset=tiny-hybrid", "engine.num_gpu_blocks_override=200", "engine.max_num_batched_tokens=96",
	"engine.max_num_seqs=64", "backend.kind=cuda", "backend.shadow=true",
	"workload.prompt_len.median=48", "workload.prompt_len.max=200",
	"workload.output_len.median=24", "workload.output_len.max=64",
}

// fixed is vLLM with both bugs fixed: what parity runs under.
var fixed = []string{"engine.vllm_version=fixed", "engine.state_index_bits=64"}

// parityRuns are the built-in scenarios parity is checked on.
var parityRuns = []struct {
	label, name string
	sets        []string
}{
	{"imposter", "imposter", []string{"workload.num_prompts=384", "workload.batch_size=32"}},
	// d_state 16 takes the decode kernel Jamba's shape uses (_n16).
	{"imposter, d_state 16", "imposter", []string{"workload.num_prompts=384", "workload.batch_size=32", "model.mamba_d_state=16"}},
	{"imposter-attention-only", "imposter-attention-only", []string{"workload.num_prompts=128", "workload.batch_size=32", "model.preset=tiny-attention"}},
	{"wrap32", "wrap32", []string{"workload.prompts=8", "workload.rollouts_per_prompt=8", "workload.steps=2"}},
	// The trace keeps its own prompt lengths (about 10k tokens): few requests.
	{"azure-conv", "azure-conv", []string{"workload.limit=6"}},
}

// Confirm runs parity, bug A and bug B on the process's GPU. An error
// means an experiment could not run; a failed prediction is Pass false.
func Confirm(opt Options) (*Confirmation, error) {
	start := time.Now()
	log := func(format string, a ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, format+"\n", a...)
		}
	}
	dev, err := cuda.Shared()
	if err != nil {
		return nil, err
	}
	c := &Confirmation{Date: start.UTC().Format("2006-01-02 15:04 UTC"), GPU: dev.Name, GPUMemGiB: float64(dev.Mem) / (1 << 30),
		Driver: fmt.Sprintf("%d.%d", dev.Driver/1000, dev.Driver%1000/10), PTX: ptxCompiler(), Build: build(),
		Command: "make confirm (bin/statesim-cuda gpu-confirm --out docs)", Tolerance: Tolerance}
	log("GPU: %s, %.0f GiB", c.GPU, c.GPUMemGiB)

	parityOK := true
	for _, p := range parityRuns {
		r, err := run(p.name, slices.Concat(tiny, fixed, p.sets))
		r.Label = p.label
		if err != nil {
			r.Note = err.Error()
			log("parity %-24s skipped: %v", p.label, err)
			c.Parity = append(c.Parity, r)
			continue
		}
		r.Pass = parityPass(&r, c.Tolerance)
		parityOK = parityOK && r.Pass
		st, par := r.Stats, r.GPU.Parity
		log("parity %-24s %4d requests, %6d tokens: max |Δ| GPU−reference %.2e, GPU−mock %.2e over %d tokens (%d requests sampled another id), divergent %d: %s",
			p.label, st.RequestsCompared, st.TokensCompared, st.MaxDelta, par.MaxDelta, par.TokensCompared, par.TokenMismatches, st.RequestsDivergent, passFail(r.Pass))
		c.Parity = append(c.Parity, r)
	}

	// Bug A: the imposter workload under v0.13 on a small pool.
	c.BugA, err = run("imposter", slices.Concat(tiny, []string{"engine.vllm_version=v0.13", "engine.state_index_bits=64",
		"workload.num_prompts=384", "workload.batch_size=32"}))
	if err != nil {
		return nil, fmt.Errorf("bug A run: %w", err)
	}
	a := &c.BugA
	a.Label, a.Pass = "imposter, v0.13", bugAPass(a)
	log("bug A  imposter v0.13: %d imposters %v; divergent GPU %v; divergent mock %v: %s", len(a.Imposters), a.Imposters, a.DivergentGPU, a.DivergentMock, passFail(a.Pass))

	// Bug B: the prefill scan at Jamba Reasoning 3B's state size.
	c.BugBPass = true
	for _, bits := range []uint{32, 64} {
		r, err := ConfirmBugB(dev, bits, opt.BugBTokens)
		if err != nil {
			return nil, fmt.Errorf("bug B (%d-bit): %w", bits, err)
		}
		ok := bugBPass(&r)
		c.BugBPass = c.BugBPass && ok
		log("bug B  %d-bit: slot %d (first wrapping %d, stride %d elems, %.1f GiB buffer): final state at blocks %d..%d (rel err %.1e); intended slot stale %v; victim slot %d clobbered %v (%d elems); next decode read stale %v (rel err %.1e vs stale, %.1e vs final): %s",
			bits, r.Slot, r.FirstWrappingSlot, r.StrideElems, r.BufferGiB, r.Predicted, r.PredictedLast, r.FinalAtPredicted, r.IntendedStale, r.Victim, r.VictimClobbered, r.VictimElemsChange,
			r.DecodeReadStale, r.DecodeVsStale, r.DecodeVsFinal, passFail(ok))
		c.BugB = append(c.BugB, r)
	}
	c.Pass = parityOK && a.Pass && c.BugBPass
	c.Elapsed = time.Since(start)
	return c, nil
}

// run replays one built-in scenario with sets on the GPU and reads the
// outcome from its report only.
func run(name string, sets []string) (Run, error) {
	r := Run{Scenario: name, Sets: sets}
	sc, err := scenarios.Load(name, sets)
	if err != nil {
		return r, err
	}
	rep, err := engine.Run(sc, engine.Options{})
	if err != nil {
		return r, err
	}
	gpu, ok := rep.Extra["cuda"].(cuda.Summary)
	if !ok || rep.Divergence == nil {
		return r, fmt.Errorf("%s: the report has no cuda section or no divergence counts (backend %s)", name, rep.Backend)
	}
	r.Requests, r.Steps, r.Stats, r.GPU = rep.Requests, rep.Steps, *rep.Divergence, gpu
	r.Imposters, r.DivergentGPU, r.DivergentMock = []int64{}, []int64{}, []int64{}
	for _, im := range rep.Imposters {
		r.Imposters = append(r.Imposters, im.RequestID)
	}
	for _, d := range rep.DivergentRequests {
		r.DivergentGPU = append(r.DivergentGPU, d.RequestID)
	}
	for _, d := range gpu.ShadowDivergences {
		r.DivergentMock = append(r.DivergentMock, d.RequestID)
	}
	slices.Sort(r.DivergentGPU)
	slices.Sort(r.DivergentMock)
	return r, nil
}

// ptxCompiler is the compiler line nvcc writes at the top of the PTX.
func ptxCompiler() string {
	lines := strings.Split(kernels.Mamba.PTX, "\n")
	for _, l := range lines[:min(12, len(lines))] {
		if v, ok := strings.CutPrefix(l, "// Cuda compilation tools, "); ok {
			return "nvcc " + v
		}
	}
	return "unknown compiler"
}
