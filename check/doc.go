// Package check holds statesim's invariants. The scheduler-level ones
// (token budget, max_num_seqs, block conservation, time, liveness) are
// checked here from each step record and the run's end; the cache-level
// ones (decode before prefill, stale reads, wrapped writes) are found by
// the symbolic backend as it performs every access, and reported into the
// same Recorder. The vocabulary (names, Violation, Recorder) is package
// invariant's; checkers import it from there.
//
// Checks read values only (step records); they never reach into the
// scheduler, the pool or a backend.
package check
