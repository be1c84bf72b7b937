package sched

import (
	"statesim/sim"
	"statesim/statecache"
)

// RequestID is statecache's request identity.
type RequestID = statecache.RequestID

// Status is a request's place in the engine, as vLLM's RequestStatus.
type Status uint8

const (
	Waiting Status = iota
	Running
	Preempted // back in the waiting queue after a recompute preemption
	Finished
)

func (s Status) String() string {
	return [...]string{"waiting", "running", "preempted", "finished"}[s]
}

// Request is one generation request.
type Request struct {
	ID          RequestID
	ArrivalTime sim.Time
	Priority    int // lower is served first under the priority policy
	// Group is the workload's grouping (batch, training step) or -1.
	Group int

	NumPromptTokens int
	MaxTokens       int // output tokens to generate (ignore_eos)

	NumOutputTokens   int
	NumComputedTokens int
	// Speculative decoding: NumDrafts is len(spec_token_ids), the drafts
	// the drafter proposed for the next step; NumAccepted the runner's
	// num_accepted_tokens (1 + the drafts accepted in the last step, 1
	// after a prefill; 0 is read as 1): the state column the next decode
	// continues from is NumAccepted - 1. Under async scheduling the
	// runner's value is set when the step runs (sched/async.go).
	NumDrafts, NumAccepted int
	// NumOutputPlaceholders are tokens scheduled steps will sample whose
	// output is not applied yet (async scheduling; 0 otherwise): vLLM's
	// num_output_placeholders, counted in NumComputedTokens already.
	// pendingRejected: the drafts the step in flight rejected, which come
	// off NumComputedTokens only when its output is applied.
	NumOutputPlaceholders int
	pendingRejected       int
	pendingStep           int64
	Status                Status
	NumPreemptions        int
	// SharedPrefixBoundary is vLLM's request.shared_prefix_boundary
	// (#47782): from the last prefix lookup, where a shared prefix the
	// Mamba groups hold no state for ends (0: none); align mode's split
	// stops each chunk on the last block boundary before it.
	SharedPrefixBoundary int
	// prefillChunk is vLLM's is_prefill_chunk: the request's last
	// scheduled row did not reach its known tokens.
	prefillChunk bool
	// prefillLen is the known tokens when the request last left the
	// waiting queue: Model Runner V2's prefill_len (PrefillLen).
	prefillLen int

	// batchRow is the request's row in the persistent input batch plus
	// one (0: not in it); joinStamp and schedStamp mark the step in which
	// it left the waiting queue, and was scheduled; schedIdx is its place
	// in that step's scheduling order. Kept next to the counts every step
	// reads, on the same cache line.
	batchRow              int
	joinStamp, schedStamp int64
	// prevRow is the request's row plus one in the step numbered
	// prevStep − 1, if it sampled there (prev_req_id_to_index; accepted.go).
	prevRow  int32
	prevStep int64
	schedIdx int32

	Blocks statecache.BlockTable
	// Prefix names the prompt's leading tokens others may share, and
	// OutputID the content of the rest (prompt tail, then output): what
	// the block hashes are made of (statecache.SegmentBlockHashes).
	Prefix   []statecache.Segment
	OutputID uint64
	// PrivateTail: no other request names OutputID (a session's next turn
	// does), so the blocks past Prefix hold tokens only this request has.
	PrivateTail bool
	// BlockHashes are the hashes of the request's full blocks of known
	// tokens, grown as tokens are known (vLLM's request.block_hashes);
	// used only with prefix caching.
	BlockHashes []statecache.BlockHash

	// Seed determines the request's prompt token ids for numeric
	// backends, and its sampling stream.
	Seed uint64

	// CorruptStep is the first step at which the request's state was
	// computed from bytes not its own (set by the cache-access check), or
	// -1. Every later token of the request inherits the corruption.
	CorruptStep int64

	FirstTokenTime sim.Time // -1 until the first output token
	LastTokenTime  sim.Time
	FinishTime     sim.Time
}

// NumTokens is prompt plus generated tokens: what must be computed.
func (r *Request) NumTokens() int { return r.NumPromptTokens + r.NumOutputTokens }

// AcceptedColumn is the state column (0..K) holding r's state after its
// computed tokens: num_accepted_tokens - 1.
func (r *Request) AcceptedColumn() int { return max(r.NumAccepted, 1) - 1 }

// IsPrefilling reports whether the prompt is not yet fully computed.
func (r *Request) IsPrefilling() bool { return r.NumComputedTokens < r.NumPromptTokens }
