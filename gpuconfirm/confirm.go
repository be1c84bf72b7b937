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
	// The state kernels: parity, the GDN imposter, speculative decoding.
	c.StatesPass = true
	for _, sr := range stateRuns {
		r, err := runWith(sr.scenario, slices.Concat([]string{"backend.kind=cuda", "backend.shadow=true"}, sr.sets), true)
		r.Label, r.Kind = sr.label, sr.kind
		if err != nil {
			r.Note = err.Error()
			c.StatesPass = false
			log("state  %-34s failed to run: %v", sr.label, err)
			c.States = append(c.States, r)
			continue
		}
		r.Pass = statePass(&r, c.Tolerance)
		c.StatesPass = c.StatesPass && r.Pass
		pm := 0.0
		if r.GPU.Parity != nil {
			pm = r.GPU.Parity.MaxDelta
		}
		log("state  %-34s %4d requests, %6d tokens, %d launches: max |Δ| GPU−reference %.2e, GPU−mock %.2e; stale readers %v, divergent GPU %v, mock %v: %s",
			sr.label, r.Stats.RequestsCompared, r.Stats.TokensCompared, r.GPU.StateKernelLaunches, r.Stats.MaxDelta, pm, r.StaleReaders, r.DivergentGPU, r.DivergentMock, passFail(r.Pass))
		c.States = append(c.States, r)
	}
	c.Pass = parityOK && a.Pass && c.BugBPass && c.StatesPass
	c.Elapsed = time.Since(start)
	return c, nil
}

// stateRuns are the state kernels' scenarios (run from the repository
// root, as make confirm does): parity on Qwen3-Next and Nemotron-H cut to
// 8 layers, the GDN imposter (#51562), and two speculative-decoding bugs
// whose wrong tokens come from a state column, with their fixed twins:
// #55894 (a draft row through the Mamba2 prefill kernel) and #53051 (the
// GDN decode graph replayed over a stale column index).
var stateRuns = []struct {
	label, kind, scenario string
	sets                  []string
}{
	{"GDN parity (fixed)", "parity", "gpuconfirm/testdata/gdn-parity.yaml", nil},
	{"Mamba2 parity (fixed)", "parity", "gpuconfirm/testdata/mamba2-parity.yaml", nil},
	{"GDN imposter, v0.22 (#51562)", "bug", "gpuconfirm/testdata/gdn-imposter.yaml", nil},
	{"GDN imposter, fixed", "clean", "gpuconfirm/testdata/gdn-imposter.yaml", []string{"engine.vllm_version=fixed"}},
	{"Mamba2 MTP draft through prefill (#55894)", "bug", "scenarios/regressions/mtp-min-threshold-nemotron.yaml", nil},
	{"Mamba2 MTP, #55898", "clean", "scenarios/regressions/mtp-min-threshold-nemotron-55898.yaml", nil},
	{"GDN MTP stale graph column (#53051)", "bug", "scenarios/regressions/cudagraph-stale-qwen3-next-mtp.yaml", nil},
	{"GDN MTP, #53059 on V1", "clean", "scenarios/regressions/cudagraph-stale-qwen3-next-mtp-53059.yaml", nil},
}

// run replays one built-in scenario with sets on the GPU and reads the
// outcome from its report only.
func run(name string, sets []string) (Run, error) { return runWith(name, sets, false) }

// runWith is run, keeping every violation when all (the stale readers).
func runWith(name string, sets []string, all bool) (Run, error) {
	r := Run{Scenario: name, Sets: sets}
	sc, err := scenarios.Load(name, sets)
	if err != nil {
		return r, err
	}
	rep, err := engine.Run(sc, engine.Options{KeepAll: all})
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
	if all {
		for _, v := range rep.Violations {
			if v.Name != "stale-slot-read" {
				continue
			}
			if !slices.Contains(r.StaleReaders, v.RequestID) {
				r.StaleReaders = append(r.StaleReaders, v.RequestID)
			}
			if v.PrevOwner >= 0 && !slices.Contains(r.StaleWritten, v.RequestID) {
				r.StaleWritten = append(r.StaleWritten, v.RequestID)
			}
		}
		slices.Sort(r.StaleReaders)
		slices.Sort(r.StaleWritten)
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
