// Package sweep runs a scenario over a grid of --set values and seeds and
// tabulates what each cell found: violations per invariant, imposters,
// corrupted and divergent requests per 1,000, the first wrapped state
// write, preemptions and throughput.
//
// A sweep is deterministic whatever the number of workers: every cell is an
// independent run identified by its key values and seed, finished cells are
// written atomically (temp file + rename) to the output directory, and
// results are always merged in grid order. That makes a sweep resumable
// (finished cells are skipped) and shardable (--shard i/n takes every n-th
// cell; Merge joins shard directories into the unsharded result).
//
// The package never reads the wall clock into results; progress reporting
// is the caller's business.
package sweep
