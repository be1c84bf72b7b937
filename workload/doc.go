// Package workload turns a scenario's workload section into arrivals:
// closed-loop RL batches and rollouts (the next group arrives when the
// previous one has finished), open-loop Poisson arrivals, trace replay
// (Azure CSV or JSONL, at a rate scale) and generated synthetic traces.
// Sources are pulled one arrival at a time, so a trace is never held in
// memory. Randomness comes only from the sim.Streams passed in.
package workload
