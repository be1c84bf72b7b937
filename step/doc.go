// Package step is what one simulated step did, as plain values: the
// engine yields one Record per step (in the spirit of etcd raft's Ready),
// and everything that prints, draws or checks a run — the report, explain,
// plots, timelines, sweeps, the --trace writer, the property observer —
// reads Records, never the scheduler, the block pool or a backend.
//
// A Record and its slices are reused from step to step: a reader copies
// what it keeps. The package holds no behaviour beyond small accessors.
package step
