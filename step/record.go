package step

import (
	"statesim/invariant"
	"statesim/sched"
	"statesim/sim"
	"statesim/statecache"
)

// Detail selects the optional, costlier parts of a Record.
type Detail uint8

const (
	// Reads fills Row.Reads: the provenance of every state block a row's
	// Mamba kernels saw (explain).
	Reads Detail = 1 << iota
	// Holdings fills Record.Held: every block in a running request's
	// table with the pool's own view of its holder (the property observer).
	Holdings
)

// Record is one executed step.
type Record struct {
	Step       int64
	Start, End sim.Time
	// NumScheduledTokens is the step's token total; NumDecodes the rows on
	// the Mamba decode path (Rows[:NumDecodes]).
	NumScheduledTokens int
	NumDecodes         int
	// Rows are the batch in the order the model runner executes it.
	Rows []Row
	// Preempted are the requests preempted (recompute) while scheduling.
	Preempted []int64
	// BlockCopies are the copies-on-write the worker ran before the rows
	// (fine-grained prefix hits), in the scheduler's order.
	BlockCopies []statecache.BlockCopy

	// Violations found in this step, by every checker, in the order found;
	// Detail is empty past the recorder's keep limit. Counts is exact.
	Violations []invariant.Violation
	Counts     [invariant.NumInvariants]int32
	// Wrapped are the state writes whose address wrapped (bug B).
	Wrapped []Wrap
	// Imposters counts rows of new requests on the decode path that read
	// another request's bytes (bug A caught in the act).
	Imposters int32

	// Queue and pool, as the step ended (before finished requests left).
	Waiting, Running int
	NumBlocks        int // the pool, null block included
	BlocksHeld       int
	BlocksFree       int
	// BlocksHeldByRunning sums the running requests' tables.
	BlocksHeldByRunning int
	// SharedBlockRefs are the table entries that name a block another
	// table names too (prefix caching): BlocksHeld + SharedBlockRefs =
	// BlocksHeldByRunning.
	SharedBlockRefs int
	// StateBlocksHeld counts state blocks in running requests' tables.
	StateBlocksHeld int
	// HighestSlot is the highest state slot any kernel has addressed so
	// far in the run.
	HighestSlot int32
	// Held lists every block of every running request's table (Holdings).
	Held []Holding
	// Prefix caching (all 0 without it): this step's lookups, in prompt
	// tokens as vLLM's prefix_cache_queries and prefix_cache_hits count
	// them (requests back from preemption apart, as vLLM keeps them);
	// the blocks findable by hash as scheduled; cached blocks evicted
	// (reused) in this step.
	PrefixQueries, PrefixHits                   int64
	PreemptedPrefixQueries, PreemptedPrefixHits int64
	CachedBlocks                                int
	EvictedBlocks                               int64

	// Finished are the requests that completed at the end of this step.
	Finished []Finished
}

// Row is one request's part of a step.
type Row struct {
	RequestID int64
	// Group is the workload group (RL training step, batch); -1 for none.
	Group int
	// BatchIndex is the request's row in the persistent input batch.
	BatchIndex int
	// NumScheduled is the query length; NumComputed the request's
	// num_computed_tokens as the model runner sees it (before the step).
	NumScheduled, NumComputed, NumPrompt int
	// NumOutput is the tokens the request had generated before the step.
	NumOutput      int
	NumPreemptions int
	ArrivalNS      int64
	Kind           sched.Kind
	Region         sched.Region
	// Path is the Mamba metadata builder's kernel path.
	Path            sched.Path
	HasInitialState bool
	// StateBlocks are the row's state blocks, one per Mamba group.
	StateBlocks []int32
	// BlocksShort is how many blocks the row's table lacks for its tokens
	// (0 when the scheduler allocated what it scheduled).
	BlocksShort int
	// Status is the request's status when scheduled (running, unless a
	// policy broke the rules).
	Status sched.Status
	// CorruptStep is the step since which the request's state is corrupt
	// (-1: clean), as of the end of the step.
	CorruptStep int64
	// Reads are the state blocks the kernels read (Detail Reads).
	Reads []Read
	// Graph is the CUDA graph the runner dispatched the step to
	// (sched.Behaviour.Dispatch), the same for every row: a FULL replay
	// runs the row through the decode kernel whatever Path says.
	Graph sched.Graph
	// KernelSlots are the state slots, one per Mamba group, that the
	// replayed graph's kernel addresses for the row when they differ from
	// StateBlocks (the persistent state-index buffer left stale); empty
	// when the kernel addresses the row's own.
	KernelSlots []int32
	// NumDrafts are the draft tokens among NumScheduled (speculative
	// decoding).
	NumDrafts int
}

// Samples reports whether the row computes every token its request
// knows, so that the step samples a token for it.
func (r *Row) Samples() bool { return r.NumComputed+r.NumScheduled >= r.NumPrompt+r.NumOutput }

// Imposter reports a row of a request with no state on the decode path.
func (r *Row) Imposter() bool { return r.Kind.IsNew() && r.Path == sched.PathDecode }

// Wrap is one wrapped state write: the prefill kernel's address for
// Slot, formed in too few bits, landed in blocks [First, Last].
type Wrap struct {
	RequestID   int64
	Group       int
	Slot        int32
	First, Last int32
}

// Read is one state block as a kernel found it.
type Read struct {
	Block int32
	// Own: the bytes are the reader's own state after exactly the tokens
	// it has computed.
	Own bool
	// Held is what the block held and Reader who read it; Describe puts
	// them in words only when asked (explain asks for one request's rows
	// of thousands).
	Held   statecache.Provenance
	Reader statecache.RequestID
}

// Describe is what the block held, in words.
func (r Read) Describe() string { return r.Held.Describe(r.Reader) }

// Holding is one block in a running request's table.
type Holding struct {
	Block int32
	// Table is the request whose table lists the block; Pool the holder
	// the block pool records.
	Table, Pool int64
}

// Finished is a request that completed.
type Finished struct {
	RequestID       int64
	Group           int
	NumPromptTokens int
	NumOutputTokens int
	ArrivalNS       int64
	FirstTokenNS    int64
	LastTokenNS     int64
	FinishNS        int64
	// BlocksHeld is what its table still held once it was freed (0).
	BlocksHeld int
}

// Reset empties r for the next step, keeping its buffers. Field by field:
// a whole-struct assignment of a value holding slices is a typed copy with
// write barriers, and this runs once per simulated step.
func (r *Record) Reset() {
	r.Step, r.Start, r.End = 0, 0, 0
	r.NumScheduledTokens, r.NumDecodes = 0, 0
	r.Rows, r.Preempted, r.BlockCopies = r.Rows[:0], r.Preempted[:0], r.BlockCopies[:0]
	r.Violations, r.Counts = r.Violations[:0], [invariant.NumInvariants]int32{}
	r.Wrapped, r.Imposters = r.Wrapped[:0], 0
	r.Waiting, r.Running = 0, 0
	r.NumBlocks, r.BlocksHeld, r.BlocksFree = 0, 0, 0
	r.BlocksHeldByRunning, r.StateBlocksHeld, r.HighestSlot = 0, 0, 0
	r.SharedBlockRefs = 0
	r.Held, r.Finished = r.Held[:0], r.Finished[:0]
	r.PrefixQueries, r.PrefixHits, r.PreemptedPrefixQueries, r.PreemptedPrefixHits = 0, 0, 0, 0
	r.CachedBlocks, r.EvictedBlocks = 0, 0
}

// PrefixHitRate is the step's hits over queries, in tokens (0 when none).
func (r *Record) PrefixHitRate() float64 {
	if r.PrefixQueries == 0 {
		return 0
	}
	return float64(r.PrefixHits) / float64(r.PrefixQueries)
}

// AddRow appends an empty row, reusing the buffers of the row that last
// stood at that position.
func (r *Record) AddRow() *Row {
	n := len(r.Rows)
	if n < cap(r.Rows) {
		r.Rows = r.Rows[:n+1]
		row := &r.Rows[n]
		sb, rd, ks := row.StateBlocks[:0], row.Reads[:0], row.KernelSlots[:0]
		// Cleared, then the buffers put back: a literal holding them is
		// built aside and copied, twice the cost (BenchmarkAddRow44).
		*row = Row{}
		row.StateBlocks, row.Reads, row.KernelSlots = sb, rd, ks
		return row
	}
	r.Rows = append(r.Rows, Row{})
	return &r.Rows[n]
}
