// Package knownbugs is docs/bugs.md's table as data (bugs.yaml, embedded)
// and the rule that says which rows can hit one deployment: its release
// and patches, the metadata builder and state kind of its model, and the
// flags each bug needs (speculative method, CUDA-graph mode, model
// runner, Mamba cache mode, async scheduling, index width). `statesim
// audit` prints the rows that apply, each with its trigger and what
// closes it.
//
// It judges a validated scenario's settings only; it runs nothing. A row
// is a claim about vLLM: its trigger and fix come from docs/bugs.md,
// where each cites vLLM's code and the search that finds it.
package knownbugs
