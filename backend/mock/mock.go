package mock

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"

	"statesim/backend"
	"statesim/model"
	"statesim/report"
	"statesim/sched"
	"statesim/sim"
	"statesim/statecache"
)

// DefaultThreshold is the |Δ log-prob| above which a generated token counts
// as divergent. The engine and the reference run the same float32
// operations in the same order, so on a healthy request Δ is exactly 0;
// any threshold above 0 is noise-free, and 1e-3 also tolerates a port
// whose summation order differs.
const DefaultThreshold = 1e-3

// Config is what the mock backend needs from the scenario.
type Config struct {
	Shape  model.Shape
	Layout model.Layout
	// NumBlocks is the pool size including the null block (num_gpu_blocks);
	// 0 takes the symbolic backend's.
	NumBlocks int
	// IndexBits is the width of the prefill kernel's state-index product
	// (16..64; 32 = bug B); 0 takes the symbolic backend's, or 64.
	IndexBits uint
	// WeightSeed draws the model (NewWeights).
	WeightSeed uint64
	// Temperature 0 is greedy; above 0, seeded sampling per request.
	Temperature float64
	// Threshold on |Δ log-prob|; 0 means DefaultThreshold.
	Threshold float64
	// TraceIDs are requests whose per-token comparison is kept for Trace.
	TraceIDs []int64
	// NumSpec is speculative decoding's num_speculative_tokens (0: off):
	// the tiny stand-in's conv state holds K − 1 + NumSpec columns.
	NumSpec int
	// ChunkedPrefill runs the Mamba2, GDN, KDA and linear-attention
	// prefill in chunks (SSD, the chunked delta rule) instead of token by
	// token: equal to float32 rounding, not bit for bit (state.go).
	ChunkedPrefill bool
	// SharedPrefixes names a prompt's shared prefix tokens by its
	// segments (PrefixToken), so requests sharing a prefix share its
	// tokens and a cached KV block holds the reader's keys: prefix caching.
	SharedPrefixes bool
	// StateKernels, when set, runs the engine's state recurrences (not
	// the reference's): a GPU backend's kernels over its own state caches.
	StateKernels StateKernels
	// AsyncScheduling is the engine's async scheduling: a step may run
	// before the previous one's output is applied, so a row samples its
	// tokens (the accepted drafts the scheduler drew with it, then the
	// bonus) when it runs, and the engine's count catches up later.
	AsyncScheduling bool
}

// Stats and Divergence are the differential check's values; they live in
// package backend so that reports carry them without importing the mock.
type (
	Stats      = report.DivergenceStats
	Divergence = report.Divergence
)

// TokenTrace is one generated token seen by both runs.
type TokenTrace struct {
	Index         int     `json:"index"`
	Position      int     `json:"position"`
	Step          int64   `json:"step"`
	EngineToken   int32   `json:"engine_token"`
	EngineLogProb float64 `json:"engine_logprob"`
	RefLogProb    float64 `json:"reference_logprob"`
	// RefToken is what the reference would have picked greedily, with its
	// log-prob.
	RefToken        int32   `json:"reference_token"`
	RefTokenLogProb float64 `json:"reference_token_logprob"`
	Delta           float64 `json:"delta"`
}

// Trace is the full comparison of a kept request.
type Trace struct {
	RequestID       int64        `json:"request_id"`
	Seed            uint64       `json:"seed"`
	NumPromptTokens int          `json:"num_prompt_tokens"`
	CorruptStep     int64        `json:"corrupt_step"`
	Tokens          []TokenTrace `json:"tokens"`
}

// Generated is what an engine produced for one request: its prompt
// identity and every sampled token with its log-prob and the step that
// sampled it. The mock and CUDA backends keep one per request in flight,
// and the differential check compares it with the reference.
type Generated struct {
	Seed   uint64
	Prompt int
	// Prefix: the prompt's leading tokens are its segments' (PrefixToken).
	Prefix   []statecache.Segment
	Tokens   []int32
	LogProbs []float64
	Steps    []int64
}

// TokenAt is the token at position p: a prompt token or a generated one.
func (g *Generated) TokenAt(p, vocab int) int32 {
	if p < g.Prompt {
		return PromptTokenOf(g.Seed, g.Prefix, p, vocab)
	}
	return g.Tokens[p-g.Prompt]
}

// reqData is the mock's record of one request in flight.
type reqData struct {
	req *sched.Request // valid only while in flight: engines recycle finished requests
	Generated
	pending *pendingSpec // a draft row awaiting the sampler's verdict
	// ahead is, under async scheduling, how many tokens each step whose
	// output the scheduler has not applied yet sampled, oldest first:
	// the last sum(ahead) of Tokens.
	ahead []int
}

// Mock is the numeric backend.
type Mock struct {
	cfg     Config
	sym     *backend.Symbolic
	w       *Weights
	geo     Geometry
	net     *net
	index   statecache.StateIndex // the prefill kernel's, possibly wrapping
	tensors []*cache
	// plan receives the symbolic backend's Mamba cache mode copies.
	plan backend.StatePlan

	reqs   map[statecache.RequestID]*reqData
	keep   map[int64]bool
	traces map[int64]*Trace
	divs   []Divergence
	stats  Stats

	tok     []int32
	refKey  []byte   // the model's part of a memoised reference's key
	ref     []*cache // private reference caches, reused
	refAttn [][]int32
	refSlot []int32
	// copySrc, copyDst: a step's copies-on-write (copyBlocks' scratch).
	copySrc, copyDst []int32
}

var _ backend.Backend = (*Mock)(nil)
var _ backend.Finisher = (*Mock)(nil)

// New builds the mock over the symbolic backend sym (which may be nil for a
// numeric-only run; then cfg.NumBlocks is required). Caches start empty
// and grow by the chunks the run writes (cache).
func New(cfg Config, sym *backend.Symbolic) (*Mock, error) {
	geo, err := computed(&cfg)
	if err != nil {
		return nil, err
	}
	if sym != nil {
		if n := sym.Pool.NumBlocks(); cfg.NumBlocks == 0 {
			cfg.NumBlocks = n
		} else if cfg.NumBlocks != n {
			return nil, fmt.Errorf("mock: num_blocks %d differs from the symbolic backend's pool of %d", cfg.NumBlocks, n)
		}
		if cfg.IndexBits == 0 {
			cfg.IndexBits = sym.Index.Bits
		} else if cfg.IndexBits != sym.Index.Bits {
			return nil, fmt.Errorf("mock: index bits %d differ from the symbolic backend's %d", cfg.IndexBits, sym.Index.Bits)
		}
	}
	if cfg.IndexBits == 0 {
		cfg.IndexBits = 64
	}
	if cfg.IndexBits < 16 || cfg.IndexBits > 64 {
		return nil, fmt.Errorf("mock: index bits must be in 16..64, got %d", cfg.IndexBits)
	}
	if cfg.NumBlocks < 2 {
		return nil, fmt.Errorf("mock: num_blocks must be >= 2, got %d", cfg.NumBlocks)
	}
	if cfg.Threshold == 0 {
		cfg.Threshold = DefaultThreshold
	}
	if !(cfg.Threshold > 0) || math.IsInf(cfg.Threshold, 0) {
		return nil, fmt.Errorf("mock: divergence threshold must be a positive number, got %g", cfg.Threshold)
	}
	if cfg.Temperature < 0 || math.IsNaN(cfg.Temperature) {
		return nil, fmt.Errorf("mock: temperature must be >= 0, got %g", cfg.Temperature)
	}
	index := geo.StateIndex()
	index.Bits = cfg.IndexBits
	// Without Mamba layers there is no state to address.
	hasMamba := cfg.Shape.NumMambaLayers() > 0
	if geo.Tiny && cfg.IndexBits != 64 && hasMamba {
		// The prefill's index arithmetic is the model's (its stride, in
		// its elements), so a wrap hits the slot the symbolic backend
		// names; ssmAt places it on the tiny pages or refuses it.
		if cfg.Shape.StateKind() != model.Mamba1 || sym == nil {
			return nil, fmt.Errorf("mock: %s with a %d-bit state index: only Mamba1's prefill kernel forms the narrow index, and the tiny stand-in needs the symbolic backend's (the model's) arithmetic; use a float32 shape (tiny-hybrid) or state_index_bits 64", cfg.Shape.Name, cfg.IndexBits)
		}
		index = sym.Index
	}
	if sym != nil && hasMamba && !geo.Tiny && (sym.Index.Stride != index.Stride || sym.Index.Offset != index.Offset || sym.Index.Elems != index.Elems) {
		return nil, fmt.Errorf("mock: state index (stride %d, offset %d, elems %d) differs from the symbolic backend's (%d, %d, %d)",
			index.Stride, index.Offset, index.Elems, sym.Index.Stride, sym.Index.Offset, sym.Index.Elems)
	}
	chunk := chunkGeometry(&geo)
	if perPage := (geo.PageElems + chunk - 1) / chunk; int64(cfg.NumBlocks)*perPage > math.MaxInt32 {
		return nil, fmt.Errorf("mock: %d blocks × %d chunks per page is too large for the mock's chunk tables", cfg.NumBlocks, perPage)
	}
	w, err := NewWeights(cfg.Shape, cfg.WeightSeed)
	if err != nil {
		return nil, err
	}
	nt := newNet(w, geo)
	nt.chunked = cfg.ChunkedPrefill
	m := &Mock{
		cfg: cfg, sym: sym, w: w, geo: geo, net: nt, index: index,
		reqs: map[statecache.RequestID]*reqData{}, keep: map[int64]bool{}, traces: map[int64]*Trace{},
	}
	m.stats.Threshold = cfg.Threshold
	// Everything reference reads of the Mock: the shape, the layout (geo
	// and the private caches derive from the two) and the weights.
	m.refKey = fmt.Appendf(nil, "%+v|%+v|%d|%t|", cfg.Shape, cfg.Layout, cfg.WeightSeed, cfg.ChunkedPrefill)
	for _, id := range cfg.TraceIDs {
		m.keep[id] = true
	}
	if sym != nil {
		sym.Plan = &m.plan
	}
	for t := 0; t < geo.NumTensors; t++ {
		m.tensors = append(m.tensors, newCache(int64(cfg.NumBlocks), geo.PageElems, chunk))
	}
	return m, nil
}

// CacheBound is the most host memory the mock's cache tensors can hold
// for cfg: every chunk of every page of the pool written. It is what
// checks.max_memory_gib weighs for the mock; a run holds what it writes
// (CacheBytes).
func CacheBound(cfg Config) (int64, error) {
	geo, err := computed(&cfg)
	if err != nil {
		return 0, err
	}
	chunk := chunkGeometry(&geo)
	perPage := (geo.PageElems + chunk - 1) / chunk
	// Each chunk costs its elements and, written or not, its slot in the
	// chunk table (a slice header).
	return int64(geo.NumTensors) * int64(cfg.NumBlocks) * perPage * (chunk*4 + chunkSlotBytes), nil
}

// computed sets cfg.Shape to the shape the mock computes and returns where
// its caches live: the shape itself over the layout's pages, or, for a
// shape the mock cannot compute at full size, its tiny stand-in over the
// same block ids (docs/numeric-model.md §8).
func computed(cfg *Config) (Geometry, error) {
	if Exact(&cfg.Shape) {
		return NewGeometry(&cfg.Shape, &cfg.Layout)
	}
	cfg.Shape = TinyShape(&cfg.Shape)
	return newTinyGeometry(&cfg.Shape, &cfg.Layout, cfg.NumSpec)
}

// CacheBytes is what the engine's cache tensors hold: the chunks written
// so far, the run's peak (chunks are never freed).
func (m *Mock) CacheBytes() int64 {
	var n int64
	for _, t := range m.tensors {
		n += t.bytes()
	}
	return n
}

func (m *Mock) Name() string { return "mock" }

// Weights is the model; Geometry where caches live.
func (m *Mock) Weights() *Weights            { return m.w }
func (m *Mock) Geometry() Geometry           { return m.geo }
func (m *Mock) Index() statecache.StateIndex { return m.index }

// Execute replays the step on the symbolic backend (recording stale reads
// and wrong writes), then computes every row in batch order: each row
// through all layers, tokens in order. A row samples when it computes the
// last known token of a running request, as Scheduler.Update will count.
func (m *Mock) Execute(out *sched.Output, now sim.Time) error {
	if m.sym != nil {
		// The previous step's boundary copies (the engine's PostProcess
		// after its output was applied) precede this step's reads.
		if err := m.applyPost(); err != nil {
			return err
		}
		m.plan.Ops = m.plan.Ops[:0]
		if err := m.sym.Execute(out, now); err != nil {
			return err
		}
	}
	if len(out.BlockCopies) > 0 {
		if err := m.copyBlocks(out.BlockCopies); err != nil {
			return fmt.Errorf("mock: step %d: %w", out.Step, err)
		}
	}
	next := 0
	for i := range out.Rows {
		if err := m.row(&out.Rows[i], i, &next, out.Step); err != nil {
			return fmt.Errorf("mock: step %d, request %d: %w", out.Step, out.Rows[i].Req.ID, err)
		}
	}
	// Copies the symbolic backend ran after the batch (async scheduling).
	return m.applyPost()
}

// copyBlocks runs a step's copies-on-write before its rows, after the
// previous step's boundary copies: each copy's whole page, in every
// cache tensor (copy_kv_cache_blocks_inplace copies every layer's
// backing storage, attention and state alike).
func (m *Mock) copyBlocks(copies []statecache.BlockCopy) error {
	m.copySrc, m.copyDst = m.copySrc[:0], m.copyDst[:0]
	for _, c := range copies {
		if c.Src < 0 || c.Dst < 0 || int(c.Src) >= m.cfg.NumBlocks || int(c.Dst) >= m.cfg.NumBlocks {
			return fmt.Errorf("block copy %d -> %d outside the pool of %d blocks", c.Src, c.Dst, m.cfg.NumBlocks)
		}
		m.copySrc, m.copyDst = append(m.copySrc, c.Src), append(m.copyDst, c.Dst)
	}
	for _, t := range m.tensors {
		t.copyPages(m.copySrc, m.copyDst)
	}
	return nil
}

func (m *Mock) row(row *sched.Row, i int, next *int, step int64) error {
	r := row.Req
	rd := m.reqs[r.ID]
	if rd == nil {
		rd = &reqData{req: r, Generated: Generated{Seed: r.Seed, Prompt: r.NumPromptTokens}}
		if m.cfg.SharedPrefixes {
			rd.Prefix = r.Prefix
		}
		m.reqs[r.ID] = rd
	}
	m.settle(rd, r)
	if applied := rd.applied(r.NumOutputTokens); applied != r.NumOutputTokens || rd.Prompt != r.NumPromptTokens {
		return fmt.Errorf("engine holds %d+%d tokens, the mock %d+%d", r.NumPromptTokens, r.NumOutputTokens, rd.Prompt, applied)
	}
	c, q := row.NumComputed, row.NumScheduled
	// The runner's tokens: under async scheduling, those of steps whose
	// output is not applied yet too (the previous step's sampled ids).
	known := rd.Prompt + len(rd.Tokens)
	drafts := max(c+q-known, 0)
	if q <= 0 || c < 0 || drafts > row.NumDrafts || drafts >= q {
		return fmt.Errorf("scheduled positions [%d, %d) outside the %d known tokens and %d drafts", c, c+q, known, row.NumDrafts)
	}
	vocab := m.cfg.Shape.VocabSize
	m.tok = m.tok[:0]
	for p := c; p < c+q; p++ {
		if p < known {
			m.tok = append(m.tok, rd.TokenAt(p, vocab))
		} else {
			m.tok = append(m.tok, DraftToken(rd.Seed, p, vocab))
		}
	}
	job := rowJob{
		tensors: m.tensors, attn: r.Blocks.Attn, slots: r.Blocks.Mamba, ssm: m.index, kern: m.cfg.StateKernels,
		decode: row.Path == sched.PathDecode || row.Graph == sched.GraphFull, hasInit: row.HasInitialState,
		start: c, tokens: m.tok, logitsFrom: q,
	}
	if ng := len(r.Blocks.Mamba); ng > 0 && len(r.Blocks.Spec) > 0 {
		job.specK, job.spec = len(r.Blocks.Spec)/ng, r.Blocks.Spec
		job.acc = min(r.AcceptedColumn(), job.specK)
	}
	if job.decode {
		job.kernel = row.KernelSlots
	}
	if err := m.planRow(&job, i, next); err != nil {
		return err
	}
	samples := r.Status == sched.Running && c+q >= known
	if m.cfg.AsyncScheduling && samples != row.Samples {
		return fmt.Errorf("the scheduler says the row samples: %t, the mock's %d known tokens: %t", row.Samples, known, samples)
	}
	switch {
	case m.cfg.AsyncScheduling && samples:
		// The sampler's verdict was drawn with the step: the accepted
		// drafts, each under the target's logits before it, then the
		// target's own sample after them (the bonus token).
		a := min(row.NumAccepted, drafts)
		job.logitsFrom = q - 1 - drafts
		from := job.logitsFrom
		job.onLogits = func(i int, logits []float32) {
			j := i - from // the draft after token i
			if j > a {
				return // after a rejected draft
			}
			tok := m.tok[min(i+1, len(m.tok)-1)]
			if j == a {
				tok = Sample(logits, m.cfg.Temperature, rd.Seed, c+i+1)
			}
			rd.Tokens = append(rd.Tokens, tok)
			rd.LogProbs = append(rd.LogProbs, LogProb(logits, tok))
			rd.Steps = append(rd.Steps, step)
		}
		rd.ahead = append(rd.ahead, a+1)
		m.stats.TokensSampled += int64(a + 1)
	case drafts > 0:
		// The sampler's verdict comes with Scheduler.Update: keep the
		// candidates (each draft under the target's logits before it,
		// and the target's own sample at every position) until settle.
		job.logitsFrom = q - 1 - drafts
		pd := &pendingSpec{step: step}
		rd.pending = pd
		job.onLogits = func(i int, logits []float32) {
			p := c + i + 1 // the position the token takes
			tok := Sample(logits, m.cfg.Temperature, rd.Seed, p)
			pd.sample = append(pd.sample, tok)
			pd.sampleLP = append(pd.sampleLP, LogProb(logits, tok))
			if i+1 < q {
				pd.draftLP = append(pd.draftLP, LogProb(logits, m.tok[i+1]))
				pd.draft = append(pd.draft, m.tok[i+1])
			}
		}
	case samples:
		job.logitsFrom = q - 1
		job.onLogits = func(_ int, logits []float32) {
			tok := Sample(logits, m.cfg.Temperature, rd.Seed, c+q)
			rd.Tokens = append(rd.Tokens, tok)
			rd.LogProbs = append(rd.LogProbs, LogProb(logits, tok))
			rd.Steps = append(rd.Steps, step)
		}
		m.stats.TokensSampled++
	}
	m.stats.TokensComputed += int64(q)
	return m.net.forward(&job)
}

// pendingSpec is a draft row's output before the sampler's verdict: for
// each draft, its token and log-prob under the target's logits before it;
// for each position, the target's own sample and its log-prob.
type pendingSpec struct {
	step              int64
	draft, sample     []int32
	draftLP, sampleLP []float64
}

// settle applies a draft row's verdict once Scheduler.Update has counted
// the tokens: a accepted drafts, then the target's sample after them (the
// bonus token), unless a stop came first. A finished request's
// num_accepted_tokens says how many drafts the sampler accepted when the
// stop cut the bonus.
func (m *Mock) settle(rd *reqData, r *sched.Request) {
	pd := rd.pending
	if pd == nil {
		return
	}
	rd.pending = nil
	emitted := r.NumOutputTokens - len(rd.Tokens)
	a := emitted - 1
	if r.Status == sched.Finished && r.NumAccepted-1 > a {
		a = r.NumAccepted - 1
	}
	a = min(a, len(pd.draft))
	for i := 0; i < emitted && i <= len(pd.draft); i++ {
		tok, lp := pd.sample[min(a, len(pd.sample)-1)], pd.sampleLP[min(a, len(pd.sample)-1)]
		if i < a {
			tok, lp = pd.draft[i], pd.draftLP[i]
		}
		rd.Tokens = append(rd.Tokens, tok)
		rd.LogProbs = append(rd.LogProbs, lp)
		rd.Steps = append(rd.Steps, pd.step)
		m.stats.TokensSampled++
	}
}

// applied hands the request the tokens of the steps whose output the
// scheduler has applied, the engine holding n, and returns how many it
// holds now. A step's tokens are applied whole; at a stop the engine
// keeps fewer, and Finish drops the rest.
func (rd *reqData) applied(n int) int {
	held := len(rd.Tokens)
	for _, k := range rd.ahead {
		held -= k
	}
	for len(rd.ahead) > 0 && held+rd.ahead[0] <= n {
		held += rd.ahead[0]
		rd.ahead = rd.ahead[1:]
	}
	return held
}

// Finish compares a finished (or abandoned) request with the reference
// and frees its data.
func (m *Mock) Finish(r *sched.Request) {
	rd := m.reqs[r.ID]
	if rd == nil {
		return
	}
	m.settle(rd, r)
	if len(rd.ahead) > 0 {
		// Sampled ahead but never applied (a stop cut them): the engine
		// never saw them.
		n := min(r.NumOutputTokens, len(rd.Tokens))
		m.stats.TokensSampled -= int64(len(rd.Tokens) - n)
		rd.Tokens, rd.LogProbs, rd.Steps = rd.Tokens[:n], rd.LogProbs[:n], rd.Steps[:n]
		rd.ahead = nil
	}
	delete(m.reqs, r.ID)
	m.compare(int64(r.ID), r.CorruptStep, rd)
}

// Pending is the number of requests holding engine data.
func (m *Mock) Pending() int { return len(m.reqs) }

// FlushPending compares every request still in flight, in id order, as
// it stands (for runs cut short), and frees its data.
func (m *Mock) FlushPending() {
	for _, id := range slices.Sorted(maps.Keys(m.reqs)) {
		m.Finish(m.reqs[id].req)
	}
}

// KeepTrace keeps the per-token comparison of request id (call it before
// the request finishes).
func (m *Mock) KeepTrace(id int64) { m.keep[id] = true }

// MaxReported bounds the divergences a run report lists; Stats counts all.
const MaxReported = 1000

// RefPoint is the reference's view of one generated position: the
// log-prob of the engine's token, and the reference's own greedy token with
// its log-prob.
type RefPoint struct {
	LogProb       float64
	Greedy        int32
	GreedyLogProb float64
}

// references memoises Reference across Mocks: its result is a pure
// function of the model (shape, layout and weight seed) and the request (seed,
// prompt length, tokens), and runs in one process often ask for the same
// one again: a version and its fix over one workload, a 16-bit index and
// its 64-bit control, a property search's shrinks. Bounded: when full it
// starts over.
var references struct {
	sync.Mutex
	byKey map[string][]RefPoint
}

const maxReferences = 1 << 14

// Reference recomputes prompt + tokens[:len−1] alone, from zero state, in
// private contiguous caches, in one prefill, and scores every token (or
// returns the scores of an identical earlier recomputation).
func (m *Mock) Reference(seed uint64, numPrompt int, tokens []int32) ([]RefPoint, error) {
	return m.ReferenceOf(&Generated{Seed: seed, Prompt: numPrompt, Tokens: tokens})
}

// ReferenceOf is Reference for g's prompt (its shared prefix included)
// and tokens.
func (m *Mock) ReferenceOf(g *Generated) ([]RefPoint, error) {
	seed, numPrompt, tokens := g.Seed, g.Prompt, g.Tokens
	if len(tokens) == 0 {
		return nil, nil
	}
	if numPrompt < 1 {
		return nil, fmt.Errorf("mock: reference needs a prompt of at least 1 token")
	}
	key := fmt.Appendf(m.refKey[:len(m.refKey):len(m.refKey)], "%d|%d|", seed, numPrompt)
	for _, s := range g.Prefix {
		key = fmt.Appendf(key, "%d:%d,", s.ID, s.Tokens)
	}
	key = append(key, '|')
	for _, t := range tokens {
		key = append(key, byte(t), byte(t>>8), byte(t>>16), byte(t>>24))
	}
	references.Lock()
	pts, ok := references.byKey[string(key)]
	references.Unlock()
	if ok {
		m.stats.ReferenceTokens += int64(numPrompt + len(tokens) - 1)
		return slices.Clone(pts), nil
	}
	pts, err := m.reference(g)
	if err != nil {
		return nil, err
	}
	references.Lock()
	if references.byKey == nil || len(references.byKey) >= maxReferences {
		references.byKey = map[string][]RefPoint{}
	}
	references.byKey[string(key)] = slices.Clone(pts)
	references.Unlock()
	return pts, nil
}

func (m *Mock) reference(g *Generated) ([]RefPoint, error) {
	numPrompt, tokens := g.Prompt, g.Tokens
	rd := &reqData{Generated: *g}
	L := numPrompt + len(tokens) - 1
	s := &m.cfg.Shape
	vocab := s.VocabSize
	in := make([]int32, L)
	for p := range in {
		in[p] = rd.TokenAt(p, vocab)
	}
	// Private caches: block 0 null, one page per Mamba group, then each
	// attention group's blocks contiguously.
	nm, na := m.cfg.Layout.NumMambaGroups(), m.cfg.Layout.NumAttnGroups()
	nb := (L + m.geo.BlockSize - 1) / m.geo.BlockSize
	pages := 1 + nm + na*nb
	for len(m.ref) < m.geo.NumTensors {
		m.ref = append(m.ref, newCache(0, m.geo.PageElems, chunkGeometry(&m.geo)))
	}
	for _, t := range m.ref {
		t.reset(int64(pages))
	}
	m.refSlot = m.refSlot[:0]
	for g := 0; g < nm; g++ {
		m.refSlot = append(m.refSlot, int32(1+g))
	}
	m.refAttn = m.refAttn[:0]
	for a := 0; a < na; a++ {
		bl := make([]int32, nb)
		for i := range bl {
			bl[i] = int32(1 + nm + a*nb + i)
		}
		m.refAttn = append(m.refAttn, bl)
	}
	pts := make([]RefPoint, len(tokens))
	job := rowJob{
		tensors: m.ref, attn: m.refAttn, slots: m.refSlot, ssm: m.geo.StateIndex(),
		start: 0, tokens: in, logitsFrom: numPrompt - 1,
		onLogits: func(i int, logits []float32) {
			k := i - (numPrompt - 1)
			lse := LogSumExp(logits)
			g := Greedy(logits)
			pts[k] = RefPoint{LogProb: float64(logits[tokens[k]]) - lse, Greedy: g, GreedyLogProb: float64(logits[g]) - lse}
		},
	}
	m.stats.ReferenceTokens += int64(L)
	if err := m.net.forward(&job); err != nil {
		return nil, fmt.Errorf("mock: reference run: %w", err)
	}
	return pts, nil
}

func absDelta(a, b float64) float64 {
	d := math.Abs(a - b)
	if math.IsNaN(d) || math.IsInf(d, 0) {
		return math.MaxFloat64 // still JSON-encodable
	}
	return d
}

func (m *Mock) compare(id int64, corruptStep int64, rd *reqData) {
	if len(rd.Tokens) == 0 {
		return
	}
	ref, err := m.ReferenceOf(&rd.Generated)
	if err != nil {
		// The engine ran these very positions, so the reference cannot
		// fail short of a bug here; record it as maximally divergent.
		ref = UnknownReference(len(rd.Tokens))
	}
	var each func(k int, d float64)
	if m.keep[id] {
		tr := &Trace{RequestID: id, Seed: rd.Seed, NumPromptTokens: rd.Prompt, CorruptStep: corruptStep}
		m.traces[id] = tr
		each = func(k int, d float64) {
			tr.Tokens = append(tr.Tokens, TokenTrace{
				Index: k, Position: rd.Prompt + k, Step: rd.Steps[k],
				EngineToken: rd.Tokens[k], EngineLogProb: rd.LogProbs[k], RefLogProb: ref[k].LogProb,
				RefToken: ref[k].Greedy, RefTokenLogProb: ref[k].GreedyLogProb,
				Delta: d,
			})
		}
	}
	o := Outcome{ID: id, CorruptStep: corruptStep, Generated: &rd.Generated}
	if dv, bad := Compare(&m.stats, &o, ref, m.cfg.Threshold, each); bad {
		m.divs = append(m.divs, dv)
	}
}

// Outcome is what an engine produced for one finished request: the
// differential check's input, whichever backend computed it.
type Outcome struct {
	ID, CorruptStep int64
	*Generated
}

// Compare checks o's log-probs against the reference's for the same tokens
// (ref[k] for o.Tokens[k]), counts it in st, and returns the request's
// Divergence and whether any token passed the threshold. each, when not
// nil, sees every token's |Δ|.
func Compare(st *Stats, o *Outcome, ref []RefPoint, threshold float64, each func(k int, d float64)) (Divergence, bool) {
	st.RequestsCompared++
	st.TokensCompared += int64(len(o.Tokens))
	dv := Divergence{RequestID: o.ID, FirstBadToken: -1, NumGenerated: len(o.Tokens), NumPromptToken: o.Prompt, CorruptStep: o.CorruptStep}
	for k, tok := range o.Tokens {
		d := absDelta(o.LogProbs[k], ref[k].LogProb)
		dv.MaxDelta = max(dv.MaxDelta, d)
		if d > threshold {
			dv.NumBadTokens++
			if dv.FirstBadToken < 0 {
				dv.FirstBadToken, dv.FirstBadStep = k, o.Steps[k]
				dv.EngineLogProb, dv.RefLogProb = o.LogProbs[k], ref[k].LogProb
				dv.EngineToken, dv.RefToken = tok, ref[k].Greedy
			}
		}
		if each != nil {
			each(k, d)
		}
	}
	st.MaxDelta = max(st.MaxDelta, dv.MaxDelta)
	st.TokensDivergent += int64(dv.NumBadTokens)
	if dv.FirstBadToken < 0 {
		return dv, false
	}
	st.RequestsDivergent++
	return dv, true
}

// UnknownReference stands for a reference run that failed: every token
// counts as maximally divergent.
func UnknownReference(n int) []RefPoint {
	ref := make([]RefPoint, n)
	for i := range ref {
		ref[i] = RefPoint{LogProb: math.NaN(), Greedy: -1, GreedyLogProb: math.NaN()}
	}
	return ref
}

// Divergences are the divergent requests compared so far, by request id.
func (m *Mock) Divergences() []Divergence {
	out := append([]Divergence(nil), m.divs...)
	sort.Slice(out, func(i, j int) bool { return out[i].RequestID < out[j].RequestID })
	return out
}

// Stats are the comparison and work counters.
func (m *Mock) Stats() Stats {
	st := m.stats
	st.CacheBytes = m.CacheBytes()
	return st
}

// Trace is the per-token comparison of a request listed in TraceIDs, once
// it has been compared.
func (m *Mock) Trace(id int64) (*Trace, bool) {
	t, ok := m.traces[id]
	return t, ok
}
