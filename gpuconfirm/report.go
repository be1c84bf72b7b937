package gpuconfirm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"statesim/backend/cuda"
	"statesim/report"
)

// Run is one scenario run on the GPU.
type Run struct {
	Label    string   `json:"label"`
	Scenario string   `json:"scenario"`
	Sets     []string `json:"sets"`
	Requests int64    `json:"requests"`
	Steps    int64    `json:"steps"`
	// Imposters are the symbolic check's bug-A rows (request ids).
	Imposters []int64 `json:"imposters"`
	// Stats is the GPU engine against the reference (report.Divergence);
	// GPU the CUDA backend's section (report.Extra["cuda"]).
	Stats report.DivergenceStats `json:"stats"`
	GPU   cuda.Summary           `json:"gpu"`
	// DivergentGPU / DivergentMock are the divergent request ids of the
	// GPU engine and of the mock engine, each against the reference.
	DivergentGPU  []int64 `json:"divergent_gpu"`
	DivergentMock []int64 `json:"divergent_mock"`
	// Kind, StaleReaders and StaleWritten: a state-kernel run's rule
	// ("parity", "bug" or "clean", statePass); the requests the symbolic
	// check saw read state not theirs, and those of them that read bytes
	// some request wrote (the others read never-written zeros, which is a
	// fresh state's start: right for a new request, wrong for one with
	// tokens computed).
	Kind         string  `json:"kind,omitempty"`
	StaleReaders []int64 `json:"stale_readers,omitempty"`
	StaleWritten []int64 `json:"stale_written,omitempty"`
	Pass         bool    `json:"pass"`
	Note         string  `json:"note,omitempty"`
}

// BugB is one run of the prefill scan kernel on a slot past the 32-bit
// wrap, in a state buffer of Jamba-like pages, read back on the host.
type BugB struct {
	Bits        uint    `json:"index_bits"`
	Model       string  `json:"model"`
	DInner      int     `json:"d_inner"`
	DState      int     `json:"d_state"`
	StrideElems int64   `json:"stride_elems"`
	StateOffset int64   `json:"state_offset_elems"`
	NumSlots    int     `json:"num_slots"`
	BufferGiB   float64 `json:"buffer_gib"`
	// Slot is the request's state slot; FirstWrappingSlot is where the
	// 32-bit product first wraps.
	Slot              int32 `json:"slot"`
	FirstWrappingSlot int64 `json:"first_wrapping_slot"`
	// Predicted is the block the simulator's StateIndex says the final
	// state lands in (Slot itself when nothing wraps).
	Predicted     int32 `json:"predicted_block"`
	PredictedLast int32 `json:"predicted_last_block"`
	// Victim is the slot holding another request's state at the
	// predicted address under 32 bits (the same block id in both runs).
	Victim     int32 `json:"victim_slot"`
	VictimLast int32 `json:"victim_last_block"`
	// What the read-back shows: the final state's relative error where it
	// landed, whether the intended slot still holds its old bytes, and
	// whether the victim's state was overwritten.
	FinalAtPredicted  float64 `json:"final_state_rel_err_at_predicted"`
	IntendedStale     bool    `json:"intended_slot_stale"`
	VictimClobbered   bool    `json:"victim_clobbered"`
	VictimElemsChange int64   `json:"victim_elems_changed"`
	Tokens            int     `json:"tokens"`
	// The next decode step on the slot (selective_state_update_n16,
	// 64-bit index): the relative distance of its output from the output
	// computed from the slot's old bytes and from the prefill's final
	// state; DecodeReadStale when it matches the old bytes.
	DecodeVsStale   float64 `json:"decode_rel_err_vs_stale"`
	DecodeVsFinal   float64 `json:"decode_rel_err_vs_final"`
	DecodeReadStale bool    `json:"decode_read_stale"`
}

// Confirmation is the whole report.
type Confirmation struct {
	Date      string  `json:"date"`
	GPU       string  `json:"gpu"`
	GPUMemGiB float64 `json:"gpu_memory_gib"`
	Driver    string  `json:"cuda_driver"`
	PTX       string  `json:"ptx_compiler"`
	// Build is the commit the binary was built from (Go's VCS stamp),
	// "+modified" when the working tree had uncommitted changes.
	Build     string  `json:"build,omitempty"`
	Command   string  `json:"command"`
	Tolerance float64 `json:"tolerance"`
	Parity    []Run   `json:"parity"`
	BugA      Run     `json:"bug_a"`
	BugB      []BugB  `json:"bug_b"`
	BugBPass  bool    `json:"bug_b_pass"`
	// States are the state kernels' runs (Mamba2, GDN, speculative
	// decoding's columns); StatesPass their verdict.
	States     []Run         `json:"states,omitempty"`
	StatesPass bool          `json:"states_pass,omitempty"`
	Pass       bool          `json:"pass"`
	Elapsed    time.Duration `json:"elapsed_ns"`
}

// parityPass: no divergent request, and every compared token within tol
// of both the reference and the mock engine.
func parityPass(r *Run, tol float64) bool {
	st, par := &r.Stats, r.GPU.Parity
	return st.TokensCompared > 0 && st.RequestsDivergent == 0 && st.MaxDelta <= tol && par != nil && par.MaxDelta <= tol
}

// bugAPass: the symbolic check found imposters, the GPU and the mock
// engine diverge on the same requests, and every imposter is among them.
func bugAPass(r *Run) bool {
	if len(r.Imposters) == 0 || !slices.Equal(r.DivergentGPU, r.DivergentMock) {
		return false
	}
	for _, id := range r.Imposters {
		if !slices.Contains(r.DivergentGPU, id) {
			return false
		}
	}
	return true
}

// statePass is a state-kernel run's rule: parity as parityPass; in a bug
// run the GPU engine and the mock engine diverge on the same requests,
// some, every one a stale reader, and every reader of written bytes among
// them; a clean run has no stale reader, no divergent request and parity
// within tol.
func statePass(r *Run, tol float64) bool {
	switch r.Kind {
	case "parity", "clean":
		return len(r.StaleReaders) == 0 && parityPass(r, tol)
	case "bug":
		if len(r.DivergentGPU) == 0 || !slices.Equal(r.DivergentGPU, r.DivergentMock) {
			return false
		}
		for _, id := range r.DivergentGPU {
			if !slices.Contains(r.StaleReaders, id) {
				return false
			}
		}
		for _, id := range r.StaleWritten {
			if !slices.Contains(r.DivergentGPU, id) {
				return false
			}
		}
		return true
	}
	return false
}

// bugBPass: the final state is where the simulator predicts; under 32 bits
// that is the victim's page (clobbered), the intended slot keeps its old
// bytes and the next decode reads them; under 64 bits the slot itself,
// the victim untouched and the decode continuing from the final state.
func bugBPass(r *BugB) bool {
	ok := r.FinalAtPredicted < 1e-4
	if r.Bits == 32 {
		return ok && r.IntendedStale && r.VictimClobbered && r.Predicted == r.Victim && r.DecodeReadStale
	}
	return ok && !r.IntendedStale && !r.VictimClobbered && r.Predicted == r.Slot && r.DecodeVsFinal < 1e-4
}

// revision is the commit `make cuda` built the binary from (git describe
// --dirty, through -ldflags -X); empty for other builds.
var revision string

// build names the commit the binary was built from: make cuda's revision,
// else Go's VCS stamp ("+modified" for a tree with uncommitted changes),
// else nothing (GOFLAGS=-buildvcs=false, a tree outside git).
func build() string {
	if revision != "" {
		return revision
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return ""
	}
	rev = rev[:min(12, len(rev))]
	if modified == "true" {
		rev += "+modified"
	}
	return rev
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// Write puts gpu-confirmation.json and gpu-confirmation.md into dir.
func Write(dir string, c *Confirmation) error {
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
	return os.WriteFile(filepath.Join(dir, "gpu-confirmation.md"), []byte(Markdown(c)), 0o644)
}

// Markdown renders the report for docs/gpu-confirmation.md.
func Markdown(c *Confirmation) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("# GPU confirmation: the simulator's predictions on real kernels\n")
	p("Run %s on %s (%.0f GiB, CUDA driver %s) by `%s`; %s overall, in %s.", c.Date, c.GPU, c.GPUMemGiB, c.Driver, c.Command, passFail(c.Pass), c.Elapsed.Round(time.Second))
	p("Kernels: the embedded PTX of kernels/*.cu (%s), loaded through the driver.", c.PTX)
	if c.Build != "" {
		p("Binary built from commit %s.", c.Build)
	}
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
		p("| %s | %d | %d | %.2e | %.2e | %d | %s |", r.Label, r.Stats.RequestsCompared, r.Stats.TokensCompared,
			r.Stats.MaxDelta, pm, r.Stats.RequestsDivergent, passFail(r.Pass))
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
	if len(c.States) > 0 {
		stateMarkdown(p, c)
	}
	return b.String()
}

// stateMarkdown renders the state kernels' section.
func stateMarkdown(p func(string, ...any), c *Confirmation) {
	p("\n## Mamba2 and Gated DeltaNet: the state kernels (kernels/state.cu)\n")
	p("The mock's tiny stand-in of each model (docs/numeric-model.md §8) with every state layer's recurrence on the")
	p("GPU: the decode kernel (gdn_recurrent_decode, mamba2_state_update) token by token, the prefill's chunked scan")
	p("(gdn_chunk_prefill, mamba2_ssd_scan), over recurrent-state caches in device memory addressed from the slot,")
	p("speculative decoding's state columns included; projections, conv and attention run on the CPU. Against the mock's")
	p("CPU reference and the mock engine run on the same batches (tolerance %.0e); bug runs hold the requests the", c.Tolerance)
	p("symbolic check names as stale readers to the divergent ones, on the GPU and in the mock (a reader of")
	p("never-written zeros may match: that is a fresh state's start).\n")
	p("| run | scenario | requests | tokens | launches | max \\|Δ\\| GPU−reference | max \\|Δ\\| GPU−mock | stale readers | divergent GPU | divergent mock | result |")
	p("|---|---|---:|---:|---:|---:|---:|---|---|---|---|")
	for _, r := range c.States {
		if r.Note != "" {
			p("| %s | %s | | | | | | | | | skipped: %s |", r.Label, r.Scenario, r.Note)
			continue
		}
		pm := 0.0
		if r.GPU.Parity != nil {
			pm = r.GPU.Parity.MaxDelta
		}
		p("| %s | %s | %d | %d | %d | %.2e | %.2e | %v | %v | %v | %s |", r.Label, r.Scenario, r.Stats.RequestsCompared, r.Stats.TokensCompared,
			r.GPU.StateKernelLaunches, r.Stats.MaxDelta, pm, r.StaleReaders, r.DivergentGPU, r.DivergentMock, passFail(r.Pass))
	}
	p("\nState kernels: %s.", passFail(c.StatesPass))
}
