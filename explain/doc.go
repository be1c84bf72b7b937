// Package explain follows one request through a run, step by step, from
// the engine's step records: its chunks, num_computed_tokens, region and
// kernel path, the state blocks its kernels read and what they held, its
// preemptions and violations, and (from numeric backends) its log-probs
// against the reference. It reads records and the report only.
package explain
