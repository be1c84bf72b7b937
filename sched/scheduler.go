package sched

import (
	"fmt"
	"sort"
	"strconv"

	"statesim/model"
	"statesim/sim"
	"statesim/statecache"
)

// SchedulingPolicy is vLLM's scheduling_policy: the order of the waiting
// queue and of preemption victims (vllm/v1/core/sched/request_queue.py),
// not a Policy, which decides a whole step.
type SchedulingPolicy uint8

const (
	FCFS SchedulingPolicy = iota
	Priority
)

// Config holds the engine knobs the scheduler reads, under vLLM's names.
type Config struct {
	MaxNumBatchedTokens       int
	MaxNumSeqs                int
	MaxModelLen               int
	EnableChunkedPrefill      bool
	LongPrefillTokenThreshold int // 0 = off
	SchedulingPolicy          SchedulingPolicy
	// StateKind is the model's state layers' kind: with FullRankGate
	// (KDA's use_full_rank_gate, Kimi-K3) it picks the metadata builder
	// whose split sets each row's path (BuilderOf).
	StateKind    model.StateKind
	FullRankGate bool
	// MambaAlignBlockSize, when > 0, is the Mamba block size of
	// mamba_cache_mode align: V1 cuts prefill chunks to its boundaries
	// (need_mamba_block_aligned_split, AlignMambaChunk).
	MambaAlignBlockSize int
	// HashBlockSize is hash_block_size, the granularity of a request's
	// block hashes (resolve_kv_cache_block_sizes, kv_cache_utils.py @
	// 6adad0876; package setup settles it). MambaPartialCacheHit is
	// vLLM's mamba_partial_cache_hit (Scheduler.__init__, scheduler.py
	// @ 6adad0876 lines 319-326): align mode with fine-grained prefix
	// hits on, where the chunk split also stops at the prompt's last hash
	// boundary (AlignMambaChunkTail).
	HashBlockSize        int
	MambaPartialCacheHit bool
	// UseEagle is the scheduler's use_eagle (MTP/EAGLE drafting): the
	// align split stops a block before the last boundary, whose
	// attention block the EAGLE drop gives up.
	UseEagle bool
	// Marconi is the align split's stop at an uncached shared prefix
	// (#37898's hint, #47782's per-request boundary).
	Marconi Marconi
	// AlignChunkEnds: the align split keeps every chunk's end on the
	// block grid up to the prefill's last chunk, and a chunk started
	// inside a block stops at the next boundary (#51113;
	// AlignMambaChunkStops).
	AlignChunkEnds bool
	// AsyncScheduling is vLLM's async_scheduling (AsyncScheduler,
	// vllm/v1/core/sched/async_scheduler.py): a row that samples adds an
	// output placeholder, so the request is scheduled again before the
	// step's output is applied (async.go).
	AsyncScheduling bool
	// DeferBlockFree is the scheduler's defer_block_free: a KV consumer
	// connector with overlapping batches (async scheduling), whose loads
	// are not ordered against a step in flight (Scheduler.__init__,
	// vllm/v1/core/sched/scheduler.py @ 6adad0876, lines 132-157). Then
	// the ends a step's copies-on-write retain are freed once that step's
	// output is processed (Update); otherwise at once, in Schedule, after
	// the copies are taken (_free_cow_retained_blocks): the worker runs
	// them before any later step's writes. statesim models no kv_role, so
	// nothing sets it yet.
	DeferBlockFree bool
	// PadSpecTail: under speculative decoding a waiting request with one
	// token left is scheduled as 1 + K tokens, K placeholder drafts, when
	// running requests were scheduled and none is a prefill chunk, so the
	// batch stays uniform (#45237; Behaviour.PadSpecTail).
	PadSpecTail bool
}

// alignChunk is the align-mode chunk cut for r with numComputed computed
// tokens (a waiting request's hit included); n unchanged otherwise.
func (cfg *Config) alignChunk(r *Request, numComputed, n int) int {
	return cfg.alignChunkHint(r, numComputed, n, 0)
}

// alignChunkHint is alignChunk for a request that looked its prefix up
// this step and found uncached shared tokens past its hit (#37898's
// one-step hint: num_uncached_common_prefix_tokens).
func (cfg *Config) alignChunkHint(r *Request, numComputed, n, uncached int) int {
	if cfg.MambaAlignBlockSize <= 0 {
		return n
	}
	hashBlock := 0
	if cfg.MambaPartialCacheHit {
		hashBlock = cfg.HashBlockSize
	}
	if cfg.AlignChunkEnds {
		maxPrefill := cfg.MaxNumBatchedTokens
		if t := cfg.LongPrefillTokenThreshold; t > 0 {
			maxPrefill = min(maxPrefill, t)
		}
		n = AlignMambaChunkStops(numComputed, n, r.NumPromptTokens, r.NumTokens(), cfg.MambaAlignBlockSize, hashBlock, maxPrefill, cfg.UseEagle)
	} else {
		n = AlignMambaChunkTail(numComputed, n, r.NumPromptTokens, r.NumTokens(), cfg.MambaAlignBlockSize, hashBlock, cfg.UseEagle)
	}
	return MarconiStop(cfg.Marconi, numComputed, n, r.SharedPrefixBoundary, uncached, cfg.MambaAlignBlockSize)
}

// Row is one request in a step's batch.
type Row struct {
	Req          *Request
	NumScheduled int // query length this step
	NumComputed  int // num_computed_tokens before the step (what the model runner sees)
	// PrefillLen is the length up to which the runner counts the row as
	// prefilling (Request.PrefillLen), set when the step is classified.
	PrefillLen      int
	Region          Region
	Path            Path
	HasInitialState bool
	// Samples: the row ends its request's known tokens, so the step
	// samples a token for it (not is_prefill_chunk, decided at schedule
	// time as vLLM's _update_after_schedule does).
	Samples bool
	// Graph and KernelSlots: the CUDA-graph dispatch and, on a stale
	// FULL replay, the slots its kernel addresses (cudagraph.go).
	Graph       Graph
	KernelSlots []int32
	// NumDrafts are the draft tokens among NumScheduled (speculative
	// decoding: scheduled_spec_decode_tokens); NumAccepted, set when the
	// step's output is applied, how many of them the sampler accepted.
	NumDrafts, NumAccepted int
	// Placeholders: the row's drafts are the scheduler's padding
	// ([-1] * K, Config.PadSpecTail), which the rejection sampler never
	// accepts.
	Placeholders bool
	// AcceptedHanded: the state layers' builder was handed
	// num_accepted_tokens for this row (classify), so its decode kernel
	// reads state column num_accepted_tokens - 1; otherwise every kernel
	// reads column 0 (block_table[:, 0]).
	AcceptedHanded bool
}

// Output is one step's scheduling result.
type Output struct {
	Step               int64
	Rows               []Row
	NumScheduledTokens int
	NumDecodes         int // rows[:NumDecodes] take the Mamba decode path
	Preempted          []*Request
	// BlockCopies are the copies-on-write the worker runs after zeroing
	// new blocks and before this step's forward
	// (SchedulerOutput.kv_cache_block_copies, fine-grained prefix hits).
	BlockCopies []statecache.BlockCopy
}

// addRow appends r's row of n tokens. Fields are set in place: building
// the Row on the stack and copying it stalled store forwarding, a fifth of
// a replay's scheduling time.
func (out *Output) addRow(r *Request, n int) {
	out.Rows = append(out.Rows, Row{})
	row := &out.Rows[len(out.Rows)-1]
	row.Req, row.NumScheduled, row.NumComputed = r, n, r.NumComputedTokens
}

// State is what a policy schedules over: the queues and the cache.
type State struct {
	Cfg Config
	KV  *statecache.KVCacheManager
	// HashBlocks grows r.BlockHashes to cover r's known tokens' full
	// blocks of blockSize (prefix caching only). Nil: from r's Prefix and
	// OutputID, or, with neither, as r's own tokens (UniqueBlockHashes).
	HashBlocks func(r *Request, blockSize int)
	// Spec is speculative decoding (zero: off).
	Spec    Spec
	Waiting []*Request // head first; see PushWaiting
	Running []*Request
	Now     sim.Time
	waitBuf []*Request // Waiting's backing array, reused as the head pops
	stamp   int64      // the step being scheduled (Request.joinStamp)
}

// Policy decides one step. It appends rows (in running-then-new order,
// with NumComputed set to the pre-step value) to out, allocates blocks for
// them through st.Allocate, and preempts through st.Preempt. It must not
// advance num_computed_tokens: the Scheduler does that for every policy.
type Policy interface {
	Name() string
	Schedule(st *State, out *Output) error
}

// Allocate makes r's blocks cover numTokens tokens; false means the pool
// is short and the caller should preempt. With prefix caching the blocks
// its known tokens fill are cached too.
func (st *State) Allocate(r *Request, numTokens int) (bool, error) {
	return st.allocate(r, numTokens, 0)
}

// allocate is Allocate whose numTokens include lookahead slots.
func (st *State) allocate(r *Request, numTokens, lookahead int) (bool, error) {
	if !st.KV.PrefixCaching() {
		return st.KV.Allocate(r.ID, &r.Blocks, numTokens)
	}
	st.hashes(r)
	return st.KV.AllocateSlotsLookahead(r.ID, &r.Blocks, r.NumComputedTokens, 0, numTokens, lookahead, r.NumTokens(), r.BlockHashes)
}

// hashes brings r.BlockHashes up to r's known tokens.
func (st *State) hashes(r *Request) {
	bs := st.KV.HashBlockSize()                  // the block size but with groups of other blocks
	r.Blocks.NumPromptTokens = r.NumPromptTokens // fine-grained hits cache the prompt's tail

	if len(r.BlockHashes) >= r.NumTokens()/bs {
		return
	}
	switch {
	case st.HashBlocks != nil:
		st.HashBlocks(r, bs)
	case r.OutputID != 0 || len(r.Prefix) > 0:
		r.BlockHashes = statecache.SegmentBlockHashes(r.BlockHashes, r.Prefix, r.OutputID, r.NumTokens(), bs)
	default:
		UniqueBlockHashes(r, bs)
	}
}

// UniqueBlockHashes hashes r's tokens as its own: no two requests share a
// block, though a preempted request can still hit the blocks it freed.
func UniqueBlockHashes(r *Request, blockSize int) {
	parent := statecache.NoneHash
	if n := len(r.BlockHashes); n > 0 {
		parent = r.BlockHashes[n-1]
	}
	for i := len(r.BlockHashes); (i+1)*blockSize <= r.NumTokens(); i++ {
		parent = statecache.HashBlockContent(parent, uint64(r.ID)<<24^uint64(i))
		r.BlockHashes = append(r.BlockHashes, parent)
	}
}

// admit looks a waiting request up in the prefix cache (vLLM's
// get_computed_blocks, called for a request with no computed tokens): the
// hit in tokens, 0 without prefix caching.
func (st *State) admit(r *Request) (hit, uncached int) {
	if !st.KV.PrefixCaching() || r.NumComputedTokens != 0 {
		return 0, 0
	}
	st.hashes(r)
	if from, ok := st.privateFrom(r); ok {
		r.Blocks.SetPrivateFrom(from)
	}
	hit = st.KV.GetComputedBlocks(&r.Blocks, r.BlockHashes, r.NumTokens(), r.NumPreemptions > 0)
	uncached = st.KV.UncachedCommonPrefix()
	if st.Cfg.Marconi == MarconiBoundary {
		// get_computed_blocks' shared_prefix_boundary, set on every
		// lookup (scheduler.py @ 6adad0876).
		r.SharedPrefixBoundary = 0
		if uncached > 0 {
			r.SharedPrefixBoundary = hit + uncached
		}
	}
	return hit, uncached
}

// privateFrom is the first of r's blocks whose hash no other request can
// make (hashes): past its shared Prefix when its own tokens are its own
// (PrivateTail), every block when it has neither (UniqueBlockHashes). A
// user's HashBlocks may share anything.
func (st *State) privateFrom(r *Request) (int, bool) {
	switch {
	case st.HashBlocks != nil:
		return 0, false
	case r.OutputID != 0 || len(r.Prefix) > 0:
		if !r.PrivateTail {
			return 0, false
		}
		return statecache.SegmentTokens(r.Prefix) / st.KV.BlockSize(), true
	default:
		return 0, true
	}
}

// cacheRunning is allocate_slots for a running request that needs no new
// block: the Mamba blocks its computed tokens no longer need are freed
// and the blocks its scheduled tokens fill are cached (vLLM does both on
// every call).
func (st *State) cacheRunning(r *Request, n int) error {
	st.hashes(r)
	if err := st.KV.RemoveSkippedBlocks(r.ID, &r.Blocks, r.NumComputedTokens); err != nil {
		return err
	}
	return st.KV.CacheBlocks(r.ID, &r.Blocks, min(r.NumComputedTokens+n, r.NumTokens()), r.BlockHashes)
}

// Preempt applies recompute preemption to a running request: its blocks
// are freed, num_computed_tokens is reset, and it goes back to the head of
// the waiting queue (or into priority order).
func (st *State) Preempt(r *Request, out *Output) error {
	idx := indexOf(st.Running, r)
	if idx < 0 {
		return fmt.Errorf("preempt: request %d is not running", r.ID)
	}
	st.Running = append(st.Running[:idx], st.Running[idx+1:]...)
	// It will look its own prefix up again: its private blocks must be
	// findable as vLLM's are.
	st.KV.Publish(r.ID, &r.Blocks)
	if err := st.KV.Free(r.ID, &r.Blocks); err != nil {
		return err
	}
	r.Status = Preempted
	r.NumComputedTokens = 0
	r.NumDrafts, r.NumAccepted = 0, 0 // its state is gone; the prompt is recomputed
	r.pendingRejected = 0
	r.NumPreemptions++
	st.pushWaitingFront(r)
	out.Preempted = append(out.Preempted, r)
	return nil
}

// PreemptVictim picks the request to preempt: the last running one under
// FCFS, the one with the largest (priority, arrival_time) under priority.
func (st *State) PreemptVictim() *Request {
	if len(st.Running) == 0 {
		return nil
	}
	if st.Cfg.SchedulingPolicy == FCFS {
		return st.Running[len(st.Running)-1]
	}
	v := st.Running[0]
	for _, r := range st.Running[1:] {
		// max() keeps the first of equal keys, as Python's does.
		if r.Priority > v.Priority || (r.Priority == v.Priority && r.ArrivalTime > v.ArrivalTime) {
			v = r
		}
	}
	return v
}

// AddRequest appends a new arrival to the waiting queue.
func (st *State) AddRequest(r *Request) {
	r.Status = Waiting
	if st.Cfg.SchedulingPolicy == FCFS {
		st.appendWaiting(r)
		return
	}
	st.insertByPriority(r)
}

// appendWaiting appends to the waiting queue without allocating in steady
// state: PopWaiting reslices from the head, so when the tail runs out of
// room the queue moves back to the front of its buffer, which grows only
// when it is less than half free.
func (st *State) appendWaiting(r *Request) {
	if n := len(st.Waiting); n == cap(st.Waiting) {
		if cap(st.waitBuf) < 2*n+16 {
			st.waitBuf = make([]*Request, 0, 2*n+16)
		}
		buf := st.waitBuf[:n]
		copy(buf, st.Waiting) // may overlap: copy moves
		clear(buf[n:cap(buf)])
		st.Waiting = buf
	}
	st.Waiting = append(st.Waiting, r)
}

func (st *State) pushWaitingFront(r *Request) {
	if st.Cfg.SchedulingPolicy == FCFS {
		st.appendWaiting(nil)
		copy(st.Waiting[1:], st.Waiting)
		st.Waiting[0] = r
		return
	}
	st.insertByPriority(r)
}

func prioLess(a, b *Request) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	if a.ArrivalTime != b.ArrivalTime {
		return a.ArrivalTime < b.ArrivalTime
	}
	return idLess(a.ID, b.ID)
}

// idLess orders request ids as vLLM's Request.__lt__ orders its string
// request_id (vllm/v1/request.py @ 6adad0876): statesim's id written in
// decimal, compared as text, so "10" comes before "9".
func idLess(a, b RequestID) bool {
	var x, y [20]byte
	return string(strconv.AppendInt(x[:0], int64(a), 10)) < string(strconv.AppendInt(y[:0], int64(b), 10))
}

func (st *State) insertByPriority(r *Request) {
	i := sort.Search(len(st.Waiting), func(i int) bool { return prioLess(r, st.Waiting[i]) })
	st.appendWaiting(nil)
	copy(st.Waiting[i+1:], st.Waiting[i:])
	st.Waiting[i] = r
}

// PopWaiting removes the head of the waiting queue. The request is marked
// as joining in this step (the persistent batch adds it as new or resumed,
// not as a running request).
func (st *State) PopWaiting() *Request {
	r := st.Waiting[0]
	r.joinStamp = st.stamp
	r.prefillLen = r.NumTokens()
	st.Waiting[0] = nil
	st.Waiting = st.Waiting[1:]
	return r
}

// V1Policy is vLLM V1's Scheduler.schedule (vllm/v1/core/sched/scheduler.py):
// running requests first while budget remains, then waiting requests if
// nothing was preempted, with no minimum chunk.
type V1Policy struct{}

func (V1Policy) Name() string { return "v1" }

func (V1Policy) Schedule(st *State, out *Output) error {
	cfg := &st.Cfg
	budget := cfg.MaxNumBatchedTokens
	la := st.Spec.Lookahead()
	// prefillScheduled: a running request scheduled this step is a
	// prefill chunk (scheduler.py's prefill_scheduled, #45237).
	prefillScheduled := false
	for i := 0; i < len(st.Running) && budget > 0; {
		r := st.Running[i]
		if r.surelyDone() {
			i++
			continue
		}
		// num_tokens_with_spec + num_output_placeholders −
		// num_computed_tokens: the drafts too, and under async scheduling
		// the tokens in flight, so the request is scheduled a step ahead.
		n := r.NumTokens() + r.NumDrafts + r.NumOutputPlaceholders - r.NumComputedTokens
		if t := cfg.LongPrefillTokenThreshold; t > 0 && n > t {
			n = t
		}
		n = min(n, budget, cfg.MaxModelLen-1-r.NumComputedTokens)
		// A 0 from the cut ("insufficient budget for a block-aligned
		// chunk") skips the request, as no tokens do (scheduler.py @
		// 00024d31: req_index += 1; continue).
		n = cfg.alignChunk(r, r.NumComputedTokens, n)
		if n <= 0 {
			i++
			continue
		}
		ok, err := st.allocateOrPreempt(r, n, la, out, &i, &budget)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		out.addRow(r, n)
		prefillScheduled = prefillScheduled || r.prefillChunk
		if r.NumDrafts > 0 {
			// The drafts that fit: the rest are dropped (scheduler.py
			// trims spec_token_ids to num_new_tokens).
			out.Rows[len(out.Rows)-1].NumDrafts = max(0, min(r.NumDrafts, r.NumComputedTokens+n-r.NumTokens()-r.NumOutputPlaceholders))
		}
		out.NumScheduledTokens += n
		budget -= n
		i++
	}
	if len(out.Preempted) > 0 {
		return nil
	}
	runningScheduled := len(out.Rows) > 0 // scheduled_running_reqs
	for len(st.Waiting) > 0 && budget > 0 {
		if len(st.Running) >= cfg.MaxNumSeqs {
			break
		}
		r := st.Waiting[0]
		hit, uncached := st.admit(r)
		n := r.NumTokens() - r.NumComputedTokens - hit
		// #45237 (scheduler.py @ 6adad0876, "Pad new decode requests to
		// uniform spec decoding size"): a one-token tail beside running
		// rows that are not prefill chunks becomes 1 + K tokens, or waits.
		pad := cfg.PadSpecTail && st.Spec.On() && n == 1 && runningScheduled && !prefillScheduled
		if pad {
			n = 1 + st.Spec.K
			if n > budget || r.NumComputedTokens+hit+n > cfg.MaxModelLen {
				break // "Prefer to not schedule than schedule un-padded here."
			}
		}
		if t := cfg.LongPrefillTokenThreshold; t > 0 && n > t {
			n = t
		}
		if !cfg.EnableChunkedPrefill && n > budget {
			break
		}
		n = min(n, budget)
		// A waiting request that cannot take a block-aligned chunk stops
		// the waiting loop (scheduler.py @ 00024d31: break).
		if n = cfg.alignChunkHint(r, r.NumComputedTokens+hit, n, uncached); n <= 0 {
			break
		}
		var ok bool
		var err error
		if hit > 0 {
			ok, err = st.KV.AllocateSlots(r.ID, &r.Blocks, 0, hit, hit+n, r.NumTokens(), r.BlockHashes)
		} else {
			ok, err = st.Allocate(r, r.NumComputedTokens+n)
		}
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		r.NumComputedTokens += hit // the model runner starts after the hit
		st.PopWaiting()
		st.Running = append(st.Running, r)
		r.Status = Running
		out.addRow(r, n)
		if pad {
			row := &out.Rows[len(out.Rows)-1]
			// [-1] * K, less any a cut took (a long-prefill threshold
			// under 1 + K: not modelled past keeping the row consistent).
			row.NumDrafts, row.Placeholders = min(st.Spec.K, n-1), true
		}
		out.NumScheduledTokens += n
		budget -= n
	}
	return nil
}

// allocateOrPreempt grows r's blocks for n more tokens, preempting until
// they fit (vLLM's loop around allocate_slots). A victim this step already
// scheduled (the priority policy can pick one) is un-scheduled: its tokens
// go back to *budget and *i steps back. It reports false when r itself was
// preempted: r cannot be scheduled in this step.
func (st *State) allocateOrPreempt(r *Request, n, lookahead int, out *Output, i, budget *int) (bool, error) {
	// allocate_slots' num_lookahead_tokens: room for the drafter's next
	// proposals past the scheduled tokens.
	la := max(lookahead, 0)
	n += la
	// Align mode's Mamba tables grow with the main model's tokens, which
	// the lookahead-sized attention blocks can already cover.
	short := func() bool {
		return r.NumComputedTokens+n > r.Blocks.Covered() ||
			la > 0 && st.KV.MambaNeedsBlocks(&r.Blocks, r.NumComputedTokens+n-la) ||
			st.KV.CopyOnWritePending(&r.Blocks) // a published partial tail moves to a copy
	}
	if !short() { // a decode mostly fits
		if st.KV.PrefixCaching() {
			return true, st.cacheRunning(r, n-la) // the lookahead slots are not cached
		}
		return true, nil
	}
	for short() {
		ok, err := st.allocate(r, r.NumComputedTokens+n, la)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
		victim := st.PreemptVictim()
		if st.Cfg.SchedulingPolicy == Priority && indexOf(st.Running, victim) < *i {
			// Only a victim with tokens this step steps the index back
			// (scheduler.py's req_index -= 1 sits inside "if preempted_req
			// in scheduled_running_reqs"): one skipped with 0 tokens
			// shifts the list under the index, and the request after r
			// is not looked at in this step.
			for k := range out.Rows {
				if out.Rows[k].Req == victim {
					*budget += out.Rows[k].NumScheduled
					out.NumScheduledTokens -= out.Rows[k].NumScheduled
					out.Rows = append(out.Rows[:k], out.Rows[k+1:]...)
					*i--
					break
				}
			}
		}
		if err := st.Preempt(victim, out); err != nil {
			return false, err
		}
		if victim == r {
			return false, nil
		}
	}
	return true, nil
}

// indexOf searches from the end: FCFS preempts the last running request.
func indexOf(rs []*Request, r *Request) int {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i] == r {
			return i
		}
	}
	return -1
}

// V0Policy is a control modelled on vLLM's V0 engine: a step is either all
// prefills (whole prompts, new requests only) or all decodes, never mixed.
type V0Policy struct{}

func (V0Policy) Name() string { return "v0" }

func (V0Policy) Schedule(st *State, out *Output) error {
	cfg := &st.Cfg
	budget := cfg.MaxNumBatchedTokens
	for len(st.Waiting) > 0 && len(st.Running) < cfg.MaxNumSeqs {
		r := st.Waiting[0]
		n := r.NumTokens() - r.NumComputedTokens
		if n > budget {
			break
		}
		ok, err := st.Allocate(r, r.NumComputedTokens+n)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		st.PopWaiting()
		st.Running = append(st.Running, r)
		r.Status = Running
		out.addRow(r, n)
		out.NumScheduledTokens += n
		budget -= n
	}
	if len(out.Rows) > 0 {
		return nil
	}
	for i := 0; i < len(st.Running) && budget > 0; {
		r := st.Running[i]
		n := min(r.NumTokens()-r.NumComputedTokens, budget)
		if n <= 0 {
			i++
			continue
		}
		ok, err := st.allocateOrPreempt(r, n, 0, out, &i, &budget)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		out.addRow(r, n)
		out.NumScheduledTokens += n
		budget -= n
		i++
	}
	return nil
}

// Scheduler runs a Policy and the version's classification, and applies
// step results. It owns num_computed_tokens accounting.
type Scheduler struct {
	State
	Policy       Policy
	Version      Version
	ForcePrefill bool
	// Runner is the model runner (engine.model_runner): V1's persistent
	// batch and reorder, or V2's per-step order (runner.go).
	Runner Runner
	Graphs Graphs // the CUDA-graph dispatch (cudagraph.go); zero: eager
	// OnAccepted, when set, is called in Update for each sampling row
	// under speculative decoding once its acceptance is drawn, before
	// finished requests free their blocks: the model runner's
	// post-step state copies (align mode's boundary copy) happen then.
	OnAccepted func(row *Row)
	// Batch is the model runner's persistent input batch: Rows come out in
	// its row order (V0 keeps scheduling order).
	Batch InputBatch
	step  int64
	// outs: the outputs Schedule fills; under async scheduling two
	// alternate, since a step is scheduled while the previous one is in
	// flight. last is the latest.
	outs     [2]Output
	last     int
	tmp      []Row
	finished []*Request
	// waitingDone: Update finished a request from the waiting queue.
	waitingDone bool
	// runnerPending: the last scheduled step, whose accepted counts the
	// runner has (it ran) but the requests do not yet (applyRunner).
	runnerPending *Output
	// landing: the last scheduled step whose accepted counts have not
	// reached the V1 batch's buffer; landed: the last that did, plus one
	// (accepted.go).
	landing *Output
	landed  int64
	// HostBehind: the step in flight, if any, ends before the host
	// reaches the next step's row moves (set by the engine before
	// Schedule; accepted.go).
	HostBehind bool
	// beh is Version's row, built once (behOf says for which Version).
	beh   *Behaviour
	behOf Version
}

// behaviour is the row of s.Version, rebuilt only when Version changes.
func (s *Scheduler) behaviour() *Behaviour {
	if s.beh == nil || s.behOf != s.Version {
		s.beh, s.behOf = s.Version.behaviour(), s.Version
	}
	return s.beh
}

// New builds a scheduler. Policy nil picks V1 (or V0 for Version V0).
func New(cfg Config, kv *statecache.KVCacheManager, v Version, p Policy) *Scheduler {
	if p == nil {
		p = V1Policy{}
		if v == V0 {
			p = V0Policy{}
		}
	}
	return &Scheduler{State: State{Cfg: cfg, KV: kv}, Policy: p, Version: v}
}

// Out is the last step's output (its Step is the next step's number
// minus one; before the first step it is empty).
func (s *Scheduler) Out() *Output { return &s.outs[s.last] }

// HasUnfinished reports whether any request is waiting or running.
func (s *Scheduler) HasUnfinished() bool { return len(s.Waiting)+len(s.Running) > 0 }

// Schedule runs one step's policy, advances num_computed_tokens by the
// scheduled counts (the model runner sees the pre-step values in Rows),
// and classifies the batch. The returned Output is reused by the next call
// (under async scheduling, by the one after).
func (s *Scheduler) Schedule(now sim.Time) (*Output, error) {
	s.Now = now
	if s.Cfg.AsyncScheduling {
		s.applyRunner()
		s.last = int(s.step & 1)
	}
	out := &s.outs[s.last]
	out.Rows, out.Preempted = out.Rows[:0], out.Preempted[:0]
	out.NumScheduledTokens, out.NumDecodes = 0, 0
	out.Step = s.step
	s.step++
	stamp := s.step // unique per step and never 0
	s.stamp = stamp
	s.KV.Pool.NewStepStarts(out.Step)
	if err := s.Policy.Schedule(&s.State, out); err != nil {
		return nil, fmt.Errorf("policy %s, step %d: %w", s.Policy.Name(), out.Step, err)
	}
	s.takeBlockCopies(out)
	for i := range out.Rows {
		row := &out.Rows[i]
		r := row.Req
		r.NumComputedTokens += row.NumScheduled
		r.schedIdx = int32(i)
		row.Samples = r.NumComputedTokens >= r.NumTokens()+r.NumOutputPlaceholders
		r.prefillChunk = !row.Samples // _update_after_schedule's is_prefill_chunk
		if s.Cfg.AsyncScheduling {
			s.afterSchedule(row)
		}
	}
	if cap(s.tmp) < len(out.Rows) {
		s.tmp = make([]Row, 0, 2*len(out.Rows))
	}
	// engineV1: a V1-engine release, not the V0 control (either runner).
	engineV1 := s.behaviour().Reorder != ReorderNone
	persistent := engineV1 && s.Runner == RunnerV1 // V2 keeps no persistent batch
	buffer := s.acceptedBuffer()
	if b := s.behaviour(); buffer && s.landing != nil && (s.HostBehind || !b.AcceptedCopyAsync || b.AwaitAccepted) {
		// The copy has landed, or the host waited for it (a blocking copy
		// before #40172; #53919), before any row moves.
		s.land(s.landing)
	}
	if persistent {
		s.updateBatch(out, stamp)
	}
	var spec *Spec
	if s.Spec.On() {
		spec = &s.Spec
	}
	nd, moved := classify(s.behaviour(), BuilderOf(s.Cfg.StateKind, s.Cfg.FullRankGate), out.Rows, s.tmp, s.ForcePrefill, spec, s.Runner)
	out.NumDecodes = nd
	if persistent && moved {
		s.Batch.Place(out.Rows)
	}
	if buffer && len(out.Rows) > 0 {
		if s.landing != nil {
			s.land(s.landing) // in flight: it lands after the rows moved
		}
		s.gather(out)
	}
	if engineV1 {
		s.Graphs.Step(s.behaviour(), out.Rows, nd, 1+s.Spec.K)
	}
	if s.Cfg.AsyncScheduling && s.Spec.On() {
		s.drawAccepted(out)
		if buffer && len(out.Rows) > 0 {
			s.landing = out
		}
	}
	return out, nil
}

// takeBlockCopies puts the copies-on-write the step's allocations queued
// into out (take_kv_cache_block_copies, after the scheduling loop) and,
// unless Cfg.DeferBlockFree, frees the ends they retained.
func (s *Scheduler) takeBlockCopies(out *Output) {
	out.BlockCopies = out.BlockCopies[:0]
	if !s.KV.PrefixCaching() {
		return
	}
	out.BlockCopies = s.KV.TakeBlockCopies(out.Step, out.BlockCopies)
	if !s.Cfg.DeferBlockFree {
		s.KV.ReleaseBlockCopies(out.Step)
	}
}

// updateBatch is _update_states for the persistent batch: unscheduled
// requests leave, the step's others join (new, then running, then resumed,
// each group in scheduling order), condense() closes the holes, and Rows
// are put in row order.
func (s *Scheduler) updateBatch(out *Output, stamp int64) {
	b := &s.Batch
	missing := 0
	for i := range out.Rows {
		r := out.Rows[i].Req
		r.schedStamp = stamp
		if b.row(r) < 0 {
			missing++
		}
	}
	// Every live row is scheduled in the common step: nothing to remove.
	for i := 0; len(out.Rows)-missing != b.Len()-len(b.holes) && i < b.Len(); i++ {
		switch r := b.At(i); {
		case r == nil:
		case b.row(r) != i:
			b.removeAt(i) // a recycled request object: not this row's any more
		case r.schedStamp != stamp:
			b.Remove(r)
		}
	}
	for group := 0; group < 3 && missing > 0; group++ {
		for i := range out.Rows {
			r := out.Rows[i].Req
			if b.row(r) >= 0 {
				continue
			}
			g := 2 // resumed from preemption
			switch {
			case r.joinStamp != stamp:
				g = 1 // running, but out of the batch since a step that gave it no tokens
			case r.NumPreemptions == 0:
				g = 0 // new
			}
			if g == group {
				b.Add(r)
				missing--
			}
		}
	}
	b.Condense()
	tmp := s.tmp[:len(out.Rows)]
	for i := range out.Rows {
		tmp[b.row(out.Rows[i].Req)] = out.Rows[i]
	}
	copy(out.Rows, tmp)
}

// specUpdate applies a sampling row's output under speculative decoding
// (update_from_output): the sampler accepts a of the row's drafts and
// yields a + 1 tokens; the rejected drafts come off num_computed_tokens;
// the drafter proposes K for the next step and the runner continues from
// state column a. It reports whether the request finished (and was
// queued for freeing).
func (s *Scheduler) specUpdate(row *Row, now sim.Time) bool {
	r := row.Req
	a := s.Spec.acceptedOf(row)
	row.NumAccepted = a
	r.NumComputedTokens -= row.NumDrafts - a
	r.NumAccepted, r.NumDrafts = a+1, s.Spec.K
	for k := 0; k <= a; k++ {
		if s.emit(r, now) {
			return true // a stop mid-way drops the tokens after it
		}
	}
	return false
}

// emit gives r one output token at now; it reports whether r finished
// (and was queued for freeing).
func (s *Scheduler) emit(r *Request, now sim.Time) bool {
	r.NumOutputTokens++
	if r.FirstTokenTime < 0 {
		r.FirstTokenTime = now
	}
	r.LastTokenTime = now
	if r.NumOutputTokens < r.MaxTokens && r.NumTokens() < s.Cfg.MaxModelLen {
		return false
	}
	if r.Status != Running {
		s.waitingDone = true // a preempted request's last token came in flight
	}
	r.Status = Finished
	r.FinishTime = now
	s.Batch.Remove(r) // finished_req_ids leave the batch first thing next step
	s.finished = append(s.finished, r)
	return true
}

// Update applies a finished step at time now: every row that computed all
// of its known tokens samples one token; requests that reach MaxTokens (or
// max_model_len) finish and free their blocks. The returned slice is reused
// by the next call.
func (s *Scheduler) Update(out *Output, now sim.Time) ([]*Request, error) {
	s.finished = s.finished[:0]
	if s.Cfg.DeferBlockFree && s.KV.PrefixCaching() {
		// Every copy this step ran has completed (update_from_output's
		// _drain_deferred_frees, before the finished requests' frees).
		s.KV.ReleaseBlockCopies(out.Step)
	}
	spec := s.Spec.On()
	s.waitingDone = false
	if s.Cfg.AsyncScheduling {
		s.applyRunner()
		if s.landing == out {
			s.land(out) // the step ended before the next was scheduled
		}
	}
	for i := range out.Rows {
		row := &out.Rows[i]
		r := row.Req
		if s.Cfg.AsyncScheduling {
			// The step was scheduled before the previous one's output
			// was applied: its rows' requests may have changed since.
			if !row.Samples || r.Status == Finished {
				continue
			}
			if err := s.applyAsync(out.Step, row, now); err != nil {
				return nil, err
			}
			continue
		}
		if r.Status != Running || r.NumComputedTokens < r.NumTokens() {
			if spec {
				r.NumDrafts, r.NumAccepted = 0, 1 // a prompt chunk: nothing drafted
			}
			continue
		}
		if spec {
			s.specUpdate(row, now)
			if s.OnAccepted != nil {
				s.OnAccepted(row) // before the frees: the runner's copies come first
			}
			continue
		}
		s.emit(r, now)
	}
	// update_from_output frees finished requests in the order of
	// num_scheduled_tokens, the scheduling order, not the batch's row
	// order: the free queue must not depend on the rows' order. (Under
	// async scheduling a finishing request was not scheduled again since
	// this step, surelyDone saw to it, so its schedIdx is this step's.)
	fin := s.finished
	for i := 1; i < len(fin); i++ {
		for j := i; j > 0 && fin[j].schedIdx < fin[j-1].schedIdx; j-- {
			fin[j], fin[j-1] = fin[j-1], fin[j]
		}
	}
	for _, r := range fin {
		if err := s.KV.Free(r.ID, &r.Blocks); err != nil {
			return nil, err
		}
	}
	if s.waitingDone {
		// Preempted requests whose last token arrived from a step in
		// flight (stopped_preempted_reqs).
		s.Waiting = dropFinished(s.Waiting)
	}
	if len(s.finished) > 0 {
		s.Running = dropFinished(s.Running)
	}
	return s.finished, nil
}
