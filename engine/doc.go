// Package engine replays one scenario, settled (package setup: RunSetup
// reads its plain values and parses nothing): it owns the event loop (arrivals,
// step starts and step ends on sim's virtual clock), drives the scheduler
// and the backend through each step, checks the scheduler-level invariants,
// keeps the run's metrics and step-time model, and writes the --trace
// lines.
//
// Each simulated step yields one step.Record; Options.Observe receives it,
// and everything downstream (report, explain, plots, timelines, sweeps, the
// property observer) reads records and the final report.Report, never the
// scheduler, the pool or a backend. When nothing reads single records (no
// observer, no --trace), steady decode steps are replayed in bulk
// (steady.go): the same report, byte for byte, without their records.
//
// Like the core it drives, it never reads the wall clock or a global RNG:
// a run is a pure function of its scenario and seed.
package engine
