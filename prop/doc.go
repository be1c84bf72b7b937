// Package prop is statesim's property-based search: generators of whole
// scenarios built for gopter's shrinking, the named properties every run
// must satisfy (no decode before prefill, no stale slot read, no
// wrong-address write, budget and max_num_seqs, conservation, liveness,
// determinism, numeric agreement with the reference), and a driver that
// searches for a counterexample, shrinks it, and writes it out as a
// scenario `statesim run` replays.
//
// A generated scenario is a Params value: a short explicit list of
// requests (arrival gap, prompt and output lengths) plus engine knobs.
// Requests replay through the trace workload, so a shrunk counterexample
// is a YAML file and a JSONL file next to it.
//
// The properties' own observer is a second opinion, independent of the
// simulator's checks: it recomputes budget, max_num_seqs and block
// ownership from each step record, and re-derives every row's Mamba
// kernel path from the vLLM version's reorder and split rules applied to
// the rows' token counts (classRules), never from the scheduler's choice.
// The numeric property also scores one request per run with the float64
// reference of package refmodel.
//
// The search is deterministic: one seed fixes every generated scenario
// (gopter runs with one worker), and each scenario carries its own
// simulation seed. Tests and `statesim check` share this package.
package prop
