package sched

import (
	"fmt"
	"slices"
	"strings"
)

// CUDAGraphMode is the compilation config's cudagraph_mode
// (vllm/config/compilation.py CUDAGraphMode). Only whether FULL decode
// graphs exist matters here: PIECEWISE graphs leave attention and the
// state layers eager, so their metadata is the builder's own.
type CUDAGraphMode uint8

const (
	GraphModeNone             CUDAGraphMode = iota // enforce_eager
	GraphModePiecewise                             // PIECEWISE
	GraphModeFullDecodeOnly                        // FULL_DECODE_ONLY
	GraphModeFullAndPiecewise                      // FULL_AND_PIECEWISE, vLLM's V1 default
)

var graphModeNames = [...]string{"none", "piecewise", "full_decode_only", "full_and_piecewise"}

func (m CUDAGraphMode) String() string { return graphModeNames[m] }

// ParseCUDAGraphMode reads an engine.cudagraph_mode value.
func ParseCUDAGraphMode(s string) (CUDAGraphMode, error) {
	return parseName[CUDAGraphMode](graphModeNames[:], "cudagraph_mode", s)
}

// fullDecode: the mode captures FULL graphs for uniform decode batches.
// The Mamba and GDN builders declare AttentionCGSupport.UNIFORM_BATCH, so
// FULL degrades to these too; it is not modelled separately.
func (m CUDAGraphMode) fullDecode() bool {
	return m == GraphModeFullDecodeOnly || m == GraphModeFullAndPiecewise
}

// Runner is the model runner executing the batch: V1 (GPUModelRunner,
// vllm/v1/worker/gpu_model_runner.py) or Model Runner V2
// (vllm/v1/worker/gpu/model_runner.py), the default for every model from
// v0.29.0 (#53183). Their CUDA-graph dispatch is the same shape test
// (V1's _is_uniform_decode; V2's CudaGraphManager.get_cudagraph_runtime_mode
// in vllm/v1/worker/gpu/cudagraph_utils.py @ 00383f8c), so the only
// difference modelled is where open PR #53059's guard lands: it edits V1's
// method alone.
type Runner uint8

const (
	RunnerV1 Runner = iota
	RunnerV2
)

var runnerNames = [...]string{"v1", "v2"}

func (r Runner) String() string { return runnerNames[r] }

// ParseRunner reads an engine.model_runner value.
func ParseRunner(s string) (Runner, error) {
	return parseName[Runner](runnerNames[:], "model_runner", s)
}

// parseName finds s among an enum's names (indexed by value); the error
// lists the names, leaving out "" (a value spelled by omission).
func parseName[T ~uint8](names []string, field, s string) (T, error) {
	if i := slices.Index(names, s); i >= 0 {
		return T(i), nil
	}
	known := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "" })
	return 0, fmt.Errorf("unknown %s %q (known: %s)", field, s, strings.Join(known, ", "))
}

// GuardApplies reports whether #53059's dispatch guard, when patched in,
// takes effect under runner r: it edits GPUModelRunner._is_uniform_decode
// only, so Model Runner V2 keeps the shape-only dispatch (#50532, the V2
// variant, was closed unmerged).
func (b *Behaviour) GuardApplies(r Runner) bool { return b.GraphGuard && r == RunnerV1 }

// Graph is the runtime mode the CudagraphDispatcher picks for a step.
type Graph uint8

const (
	GraphEager     Graph = iota // no graph: every kernel launched with this step's metadata
	GraphPiecewise              // state layers eager inside a piecewise graph: same metadata
	GraphFull                   // the captured decode graph replays: persistent buffers
)

func (g Graph) String() string { return [...]string{"eager", "piecewise", "full"}[g] }

// Dispatch is the runner's second classifier: the graph a batch replays,
// from its shape alone (gpu_model_runner.py _is_uniform_decode:
// max_num_scheduled_tokens == uniform_decode_query_len and num_tokens ==
// max_num_scheduled_tokens * num_reqs; V2's get_cudagraph_runtime_mode
// tests the same), unless the version carries #53059's guard and the
// runner is V1, or #51865's and the runner is V2, under which a batch
// with a row still prefilling (num_computed < the row's PrefillLen: the
// prompt under V1, prefill_len under V2) is not uniform. maxBS is the largest captured batch size
// (decode_cudagraph_max_bs; 0: unbounded); a larger batch runs
// piecewise. It reads no builder's decision: that is the point.
//
// qlen is uniform_decode_query_len, 1 + K (num_speculative_tokens).
func (b *Behaviour) Dispatch(mode CUDAGraphMode, r Runner, rows []Row, maxBS, qlen int) Graph {
	if mode == GraphModeNone || len(rows) == 0 {
		return GraphEager
	}
	if !mode.fullDecode() || (maxBS > 0 && len(rows) > maxBS) {
		return GraphPiecewise
	}
	maxQ, n := 0, 0
	for i := range rows {
		maxQ = max(maxQ, rows[i].NumScheduled)
		n += rows[i].NumScheduled
	}
	uniform := maxQ == qlen && n == maxQ*len(rows)
	if uniform && (b.GuardApplies(r) || b.GraphGuardV2 && r == RunnerV2) {
		for i := range rows {
			if rows[i].NumComputed < rows[i].PrefillLen {
				uniform = false
				break
			}
		}
	}
	if uniform {
		return GraphFull
	}
	if mode == GraphModeFullDecodeOnly {
		return GraphEager
	}
	return GraphPiecewise
}

// NullBlock is the state slot a persistent index buffer holds where no
// row's index was written: the null block (NULL_BLOCK_ID, 0), as the GDN
// builder fills the padded tail; the capture runs leave it there too.
const NullBlock int32 = 0

// StateIndexBuffer is one state group's persistent state-index buffer of
// one metadata builder (GDNAttentionMetadataBuilder's
// non_spec_state_indices_tensor, BaseMambaAttentionMetadataBuilder's
// state_indices_tensor): the device tensor the captured decode graph reads
// its rows' state slots from. The builder copies the step's indices into
// it only on a step it builds for graph replay: FULL graphs captured,
// num_prefills == 0, no spec decodes, num_decodes <= decode_cudagraph_max_bs
// (gdn_attn.py build; mamba_attn.py's equivalent since #23035). On any
// other step it keeps the last such step's contents, which a FULL replay
// then reads. It is a pure state machine over those steps.
type StateIndexBuffer struct {
	slots []int32 // slots[i]: what replayed row i addresses
}

// Build is the builder's build() for one step: rows are the batch in
// runner order, nd the builder's num_decodes, group the state group whose
// slot each row's StateBlocks holds. It refreshes the buffer when the
// builder would (see the type). vLLM pads [nd, padded size) with the null
// block and leaves the entries past it as they were; with no capture-size
// list modelled the padded size is nd, so entries past nd keep older steps'
// slots (a later, larger stale replay reads them).
func (s *StateIndexBuffer) Build(mode CUDAGraphMode, rows []Row, nd, maxBS int, slot func(i int) int32) {
	if !mode.fullDecode() || nd != len(rows) || (maxBS > 0 && nd > maxBS) {
		return
	}
	for len(s.slots) < nd {
		s.slots = append(s.slots, NullBlock)
	}
	for i := 0; i < nd; i++ {
		s.slots[i] = slot(i)
	}
}

// Addressed is the slot a replayed graph's kernel addresses for row i.
func (s *StateIndexBuffer) Addressed(i int) int32 {
	if i < len(s.slots) {
		return s.slots[i]
	}
	return NullBlock
}

// Graphs is the runner's CUDA-graph side of a step, kept by the Scheduler
// across steps: the dispatch decision and one persistent state-index
// buffer per state group of the model's builder. Mode zero (none) leaves
// every row eager and touches nothing.
type Graphs struct {
	Mode   CUDAGraphMode
	Runner Runner
	MaxBS  int // decode_cudagraph_max_bs; 0: unbounded
	bufs   []StateIndexBuffer
	kern   [][]int32 // per row: scratch behind Row.KernelSlots
}

// Step dispatches the classified rows (nd of them on the builder's decode
// path), refreshes the buffers as the builder would, and on a FULL replay
// sets each row's Graph, and KernelSlots where the buffer addresses other
// slots than the row's own. qlen is the uniform decode query length 1 + K.
func (g *Graphs) Step(b *Behaviour, rows []Row, nd, qlen int) {
	if g.Mode == GraphModeNone || len(rows) == 0 {
		return
	}
	kind := b.Dispatch(g.Mode, g.Runner, rows, g.MaxBS, qlen)
	ng := len(rows[0].Req.Blocks.Mamba)
	for len(g.bufs) < ng {
		g.bufs = append(g.bufs, StateIndexBuffer{})
	}
	for gi := 0; gi < ng; gi++ {
		g.bufs[gi].Build(g.Mode, rows, nd, g.MaxBS, func(i int) int32 {
			if gi < len(rows[i].Req.Blocks.Mamba) {
				return rows[i].Req.Blocks.Mamba[gi]
			}
			return NullBlock
		})
	}
	for len(g.kern) < len(rows) {
		g.kern = append(g.kern, nil)
	}
	for i := range rows {
		r := &rows[i]
		r.Graph = kind
		if kind != GraphFull {
			continue
		}
		own := r.Req.Blocks.Mamba
		k := g.kern[i][:0]
		differs := false
		for gi := range own {
			s := NullBlock
			if gi < len(g.bufs) {
				s = g.bufs[gi].Addressed(i)
			}
			k = append(k, s)
			differs = differs || s != own[gi]
		}
		g.kern[i] = k
		if differs {
			r.KernelSlots = k
		}
	}
}
