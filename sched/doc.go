// Package sched models vLLM's scheduler step and the batch classification
// that follows it: the V1 token-budget scheduler (running first, then
// waiting; chunked prefill with no minimum chunk; recompute preemption), a
// V0-style control that separates prefill and decode steps, and the batch
// reorder plus each metadata builder's decode/prefill split (Mamba, GDN,
// Kimi-K3 KDA: builders.go) of each vLLM version.
//
// The scheduler is a state machine: Schedule produces one step's rows,
// Update applies the step's results. It never reads a clock or an RNG;
// time arrives as an argument.
package sched
