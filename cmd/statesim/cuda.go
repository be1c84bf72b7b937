//go:build cuda

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"statesim"
	"statesim/backend"
	"statesim/backend/cuda"
	"statesim/kernels"
	"statesim/scenarios"
)

// The GPU is opened once per process, on first use, and stays current on
// the main thread (cu.Context.Lock pins it).
var (
	gpu *cuda.Device
	// gpuShadow makes every cuda backend also run the mock, for parity.
	gpuShadow bool
	// lastGPU is the backend of the latest run, for its summary.
	lastGPU *cuda.Backend
)

func openGPU() (*cuda.Device, error) {
	if gpu == nil {
		d, err := cuda.Open()
		if err != nil {
			return nil, err
		}
		gpu = d
	}
	return gpu, nil
}

func init() {
	statesim.RegisterBackend("cuda", func(env *statesim.BackendEnv) (backend.Backend, error) {
		dev, err := openGPU()
		if err != nil {
			return nil, err
		}
		sc := env.Scenario
		seed := sc.Backend.WeightSeed
		if seed == 0 {
			seed = sc.Seed
		}
		if lastGPU != nil {
			lastGPU.Close() // one run's caches at a time
		}
		b, err := cuda.New(dev, cuda.Config{Shape: *env.Shape, Layout: env.Layout, NumBlocks: env.NumBlocks,
			IndexBits: env.Sym.Index.Bits, WeightSeed: seed, Temperature: sc.Sampling.Temperature,
			Threshold: sc.Backend.DivergenceThreshold, Shadow: gpuShadow}, env.Sym)
		if err != nil {
			return nil, err
		}
		lastGPU = b
		return b, nil
	})
	commands["gpu-confirm"] = command{
		summary: "gpu-confirm [--out DIR]\n      on a GPU machine: GPU/mock parity, bug A and bug B on real kernels; writes gpu-confirmation.{md,json}",
		run:     cmdGPUConfirm,
	}
}

// tiny shrinks a built-in scenario to the tiny hybrid model on a small
// pool, where the mock's CPU reference stays fast; the workload keys
// depend on the scenario's workload kind.
var tiny = []string{
	"model.preset=tiny-hybrid", "engine.num_gpu_blocks_override=200", "engine.max_num_batched_tokens=96",
	"engine.max_num_seqs=64", "backend.kind=cuda",
	"workload.prompt_len.median=48", "workload.prompt_len.max=200",
	"workload.output_len.median=24", "workload.output_len.max=64",
}

type confirmRun struct {
	Label    string   `json:"label"`
	Scenario string   `json:"scenario"`
	Sets     []string `json:"sets"`
	Requests int64    `json:"requests"`
	Steps    int64    `json:"steps"`
	// Imposters are the symbolic check's bug-A rows (request ids).
	Imposters []int64      `json:"imposters"`
	GPU       cuda.Summary `json:"gpu"`
	// DivergentGPU / DivergentMock are the divergent request ids of the
	// GPU engine and of the mock engine, each against the reference.
	DivergentGPU  []int64 `json:"divergent_gpu"`
	DivergentMock []int64 `json:"divergent_mock"`
	Pass          bool    `json:"pass"`
	Note          string  `json:"note,omitempty"`
}

type confirmation struct {
	Date      string        `json:"date"`
	GPU       string        `json:"gpu"`
	GPUMemGiB float64       `json:"gpu_memory_gib"`
	Driver    string        `json:"cuda_driver"`
	PTX       string        `json:"ptx_compiler"`
	Command   string        `json:"command"`
	Tolerance float64       `json:"tolerance"`
	Parity    []confirmRun  `json:"parity"`
	BugA      confirmRun    `json:"bug_a"`
	BugB      []cuda.BugB   `json:"bug_b"`
	BugBPass  bool          `json:"bug_b_pass"`
	Pass      bool          `json:"pass"`
	Elapsed   time.Duration `json:"elapsed_ns"`
}

func ids(divs []int64) []int64 {
	sort.Slice(divs, func(i, j int) bool { return divs[i] < divs[j] })
	return divs
}

func runOne(name string, sets []string) (confirmRun, error) {
	cr := confirmRun{Scenario: name, Sets: sets}
	sc, err := scenarios.Load(name, sets)
	if err != nil {
		return cr, err
	}
	rep, err := statesim.Run(sc, statesim.Options{})
	if err != nil {
		return cr, err
	}
	cr.Requests, cr.Steps = rep.Requests, rep.Steps
	cr.Imposters = []int64{}
	for _, im := range rep.Imposters {
		cr.Imposters = append(cr.Imposters, im.RequestID)
	}
	cr.GPU = lastGPU.Summary()
	cr.DivergentGPU, cr.DivergentMock = []int64{}, []int64{}
	for _, d := range cr.GPU.Divergences {
		cr.DivergentGPU = append(cr.DivergentGPU, d.RequestID)
	}
	for _, d := range cr.GPU.ShadowDivergences {
		cr.DivergentMock = append(cr.DivergentMock, d.RequestID)
	}
	ids(cr.DivergentGPU)
	ids(cr.DivergentMock)
	return cr, nil
}

func cmdGPUConfirm(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpu-confirm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	outDir := fs.String("out", ".", "directory for gpu-confirmation.md and gpu-confirmation.json")
	tokens := fs.Int("bugb-tokens", 64, "prompt tokens of the bug-B prefill")
	if _, err := parseInterleaved(fs, args); err != nil {
		return exitBadInput
	}
	start := time.Now()
	dev, err := openGPU()
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitInternal
	}
	gpuShadow = true
	c := confirmation{Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), GPU: dev.Name, GPUMemGiB: float64(dev.Mem) / (1 << 30),
		Driver: fmt.Sprintf("%d.%d", dev.Driver/1000, dev.Driver%1000/10), PTX: ptxCompiler(),
		Command: "make confirm (bin/statesim-cuda gpu-confirm --out docs)", Tolerance: 1e-3, Pass: true}
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	say("GPU: %s, %.0f GiB", c.GPU, c.GPUMemGiB)

	// Parity: the built-in scenarios on the tiny hybrid, fixed + 64-bit.
	fixed := []string{"engine.vllm_version=fixed", "engine.state_index_bits=64"}
	parity := []struct {
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
	for _, p := range parity {
		sets := append(append(append([]string{}, tiny...), fixed...), p.sets...)
		cr, err := runOne(p.name, sets)
		cr.Label = p.label
		if err != nil {
			cr.Note = err.Error()
			say("parity %-24s skipped: %v", p.label, err)
			c.Parity = append(c.Parity, cr)
			continue
		}
		st, par := cr.GPU.Stats, cr.GPU.Parity
		cr.Pass = st.RequestsDivergent == 0 && st.MaxDelta <= c.Tolerance && par.MaxDelta <= c.Tolerance && st.TokensCompared > 0
		c.Pass = c.Pass && cr.Pass
		say("parity %-24s %4d requests, %6d tokens: max |Δ| GPU−reference %.2e, GPU−mock %.2e over %d tokens (%d requests sampled another id), divergent %d: %s",
			p.label, st.RequestsCompared, st.TokensCompared, st.MaxDelta, par.MaxDelta, par.TokensCompared, par.TokenMismatches, st.RequestsDivergent, passFail(cr.Pass))
		c.Parity = append(c.Parity, cr)
	}

	// Bug A: the imposter workload under v0.13 on a small pool.
	sets := append(append([]string{}, tiny...), "engine.vllm_version=v0.13", "engine.state_index_bits=64",
		"workload.num_prompts=384", "workload.batch_size=32")
	c.BugA, err = runOne("imposter", sets)
	c.BugA.Label = "imposter, v0.13"
	if err != nil {
		fmt.Fprintf(stderr, "statesim: bug A run: %v\n", err)
		return exitInternal
	}
	a := &c.BugA
	imp := map[int64]bool{}
	for _, id := range a.Imposters {
		imp[id] = true
	}
	covered := true
	for id := range imp {
		found := false
		for _, d := range a.DivergentGPU {
			found = found || d == id
		}
		covered = covered && found
	}
	a.Pass = len(a.Imposters) > 0 && slices.Equal(a.DivergentGPU, a.DivergentMock) && covered
	c.Pass = c.Pass && a.Pass
	say("bug A  imposter v0.13: %d imposters %v; divergent GPU %v; divergent mock %v: %s", len(a.Imposters), a.Imposters, a.DivergentGPU, a.DivergentMock, passFail(a.Pass))
	if lastGPU != nil {
		lastGPU.Close()
		lastGPU = nil
	}

	// Bug B: the prefill scan at Jamba Reasoning 3B's state size.
	shape, err := cuda.BugBShape()
	if err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitInternal
	}
	c.BugBPass = true
	for _, bits := range []uint{32, 64} {
		r, err := cuda.ConfirmBugB(dev, shape, bits, *tokens)
		if err != nil {
			fmt.Fprintf(stderr, "statesim: bug B (%d-bit): %v\n", bits, err)
			return exitInternal
		}
		ok := r.FinalAtPredicted < 1e-4
		if bits == 32 {
			ok = ok && r.IntendedStale && r.VictimClobbered && r.Predicted == r.Victim && r.DecodeReadStale
		} else {
			ok = ok && !r.IntendedStale && !r.VictimClobbered && r.Predicted == r.Slot && r.DecodeVsFinal < 1e-4
		}
		c.BugBPass = c.BugBPass && ok
		say("bug B  %d-bit: slot %d (first wrapping %d, stride %d elems, %.1f GiB buffer): final state at blocks %d..%d (rel err %.1e); intended slot stale %v; victim slot %d clobbered %v (%d elems); next decode read stale %v (rel err %.1e vs stale, %.1e vs final): %s",
			bits, r.Slot, r.FirstWrappingSlot, r.StrideElems, r.BufferGiB, r.Predicted, r.PredictedLast, r.FinalAtPredicted, r.IntendedStale, r.Victim, r.VictimClobbered, r.VictimElemsChange,
			r.DecodeReadStale, r.DecodeVsStale, r.DecodeVsFinal, passFail(ok))
		c.BugB = append(c.BugB, r)
	}
	c.Pass = c.Pass && c.BugBPass
	c.Elapsed = time.Since(start)
	if err := writeConfirmation(*outDir, &c); err != nil {
		fmt.Fprintf(stderr, "statesim: %v\n", err)
		return exitInternal
	}
	say("overall: %s (%s)", passFail(c.Pass), c.Elapsed.Round(time.Second))
	if !c.Pass {
		return exitViolations
	}
	return exitClean
}

// ptxCompiler is the compiler line nvcc writes at the top of the PTX.
func ptxCompiler() string {
	for _, l := range strings.Split(kernels.Mamba.PTX, "\n")[:12] {
		if v, ok := strings.CutPrefix(l, "// Cuda compilation tools, "); ok {
			return "nvcc " + v
		}
	}
	return "unknown compiler"
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func writeConfirmation(dir string, c *confirmation) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "gpu-confirmation.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("# GPU confirmation: the simulator's predictions on real kernels\n")
	p("Run %s on %s (%.0f GiB, CUDA driver %s) by `%s`; %s overall, in %s.", c.Date, c.GPU, c.GPUMemGiB, c.Driver, c.Command, passFail(c.Pass), c.Elapsed.Round(time.Second))
	p("Kernels: the embedded PTX of kernels/*.cu (%s), loaded through the driver.", c.PTX)
	p("Full numbers: docs/gpu-confirmation.json.\n")
	p("## Parity (vLLM `fixed`, 64-bit state index, tiny-hybrid model)\n")
	p("The GPU engine (statesim's CUDA kernels over device caches) against the mock's CPU reference")
	p("run and against the mock engine run on the same batches; tolerance %.0e on |Δ log-prob|.\n", c.Tolerance)
	p("| scenario | requests | tokens | max \\|Δ\\| GPU−reference | max \\|Δ\\| GPU−mock | divergent | result |")
	p("|---|---:|---:|---:|---:|---:|---|")
	for _, r := range c.Parity {
		if r.Note != "" {
			p("| %s | | | | | | skipped: %s |", r.Label, r.Note)
			continue
		}
		pm := 0.0
		if r.GPU.Parity != nil {
			pm = r.GPU.Parity.MaxDelta
		}
		p("| %s | %d | %d | %.2e | %.2e | %d | %s |", r.Label, r.GPU.Stats.RequestsCompared, r.GPU.Stats.TokensCompared,
			r.GPU.Stats.MaxDelta, pm, r.GPU.Stats.RequestsDivergent, passFail(r.Pass))
	}
	a := c.BugA
	p("\n## Bug A (vLLM v0.13, imposter workload on the tiny hybrid, 200-block pool)\n")
	p("- symbolic check's imposters (request ids): %v", a.Imposters)
	p("- divergent on the GPU: %v", a.DivergentGPU)
	p("- divergent in the mock: %v", a.DivergentMock)
	p("- %s: the GPU and the mock flag the same requests, and every imposter is among them.", passFail(a.Pass))
	p("\n## Bug B (selective_scan_fwd at Jamba Reasoning 3B's state size: d_inner 5120, d_state 16, fp32)\n")
	p("| index | slot | first wrapping slot | buffer GiB | final state landed in blocks | rel err there | intended slot stale | victim slot | victim clobbered | next decode read |")
	p("|---|---:|---:|---:|---:|---:|---|---:|---|---|")
	for _, r := range c.BugB {
		read := fmt.Sprintf("the final state (rel err %.1e)", r.DecodeVsFinal)
		if r.DecodeReadStale {
			read = fmt.Sprintf("the stale bytes (rel err %.1e)", r.DecodeVsStale)
		}
		p("| %d-bit | %d | %d | %.1f | %d..%d | %.1e | %v | %d | %v (%d of its state elems) | %s |", r.Bits, r.Slot, r.FirstWrappingSlot, r.BufferGiB,
			r.Predicted, r.PredictedLast, r.FinalAtPredicted, r.IntendedStale, r.Victim, r.VictimClobbered, r.VictimElemsChange, read)
	}
	p("\nSlot × stride is formed in the kernel's index type; the blocks the final state landed in are the ones the")
	p("simulator's `statecache.StateIndex.Span` predicts (the read-back there matches a float64 recomputation);")
	p("with the 32-bit product they are other slots' pages (the victim's state clobbered) and the intended slot keeps")
	p("its old bytes, which the next decode step (64-bit index) reads; with the 64-bit product the state lands in")
	p("the slot itself, the victim is untouched and the decode continues from the final state: %s.", passFail(c.BugBPass))
	return os.WriteFile(filepath.Join(dir, "gpu-confirmation.md"), []byte(b.String()), 0o644)
}
