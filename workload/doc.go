// Package workload turns a scenario's workload section into arrivals:
// closed-loop RL batches and rollouts (the next group arrives when the
// previous one has finished), open-loop Poisson arrivals, trace replay
// (Azure CSV or JSONL, at a rate scale), generated synthetic traces, and
// multi-turn sessions (each turn's prompt is the previous prompt and output
// plus new user text). Arrivals name the prompt tokens they share as
// statecache segments (Arrival.Prefix: a trace's hash_ids, a rollout's
// prompt, a session's history) and their own tokens by Arrival.OutputID.
// Sources are pulled one arrival at a time, so a trace is never held in
// memory. Randomness comes only from the sim.Streams passed in.
package workload
