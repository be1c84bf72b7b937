// Package timeline writes a run as Chrome trace-event JSON, the format
// Perfetto (ui.perfetto.dev) and chrome://tracing open: one track per
// request (queued, prefill chunks, decode spans, preemptions, violations)
// and one track for the scheduler's steps, with the token budget and the
// queues as counters.
//
// Consecutive decode steps of a request merge into one span so that files
// stay small; a span breaks when the request sits out a step. Events are
// written as the run produces them, so output order (and the file) is a
// function of the scenario and seed only. Timestamps are simulated time.
package timeline
