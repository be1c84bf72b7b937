// Package statecache models vLLM V1's one block pool shared by attention KV
// blocks and Mamba state slots: the free-queue order (block 0 reserved, pop
// from the head, freed blocks return reversed to the tail, never zeroed after
// start-up), per-request block tables across KV cache groups, the memory
// model that sizes the pool, the index arithmetic the Mamba kernels use to
// address a slot (including a 32-bit wrap), and the provenance of every
// block: who wrote it last, what, and how many tokens it has absorbed.
//
// Checking every access against provenance is kept O(1) per decode row:
// block tables remember what their holder verified and lease the records
// only their holder writes (see Provenances); Provenances.Plain turns that
// off, and tests require the same answers both ways.
//
// With prefix caching (PoolOptions, prefix_*.go) the pool is also vLLM's
// prefix cache: reference-counted blocks found by chained hashes, kept in
// the free queue until evicted, and the lookup every KV cache group must
// agree on. The Mamba groups' cache modes none/align/all (mamba_modes*.go)
// are per-group allocation policies and hit rules over the same pool. A
// sliding-window group with its own block size (sliding_window.go) is
// one too, and NewHybridCoordinatorAt agrees hits across groups of
// different block sizes (SlidingWindowHit joins it); KVCacheManager
// drives both for a DFlash drafter's window groups.
//
// It is a pure state machine: no clock, no randomness, no I/O.
package statecache
