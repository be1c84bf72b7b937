// Package plot draws what a run did, step by step, with gonum/plot: the
// token budget per step, cache occupancy, queue depth and preemptions, and
// latency CDFs; and the incidence charts of sweeps (a heatmap over two
// keys, a line over one).
//
// A Recorder collects the per-step series from the engine's step records
// (Recorder.Observe); ReadTrace rebuilds what it can from a --trace JSONL file
// (no waiting queue, block pool or latencies: the trace does not carry
// them). Long runs are drawn in bins of steps, but markers (new requests
// cut by the budget, invariant violations) stay at their exact steps.
//
// Plotting never feeds back into a run: the package only reads step records and reports.
package plot
