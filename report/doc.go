// Package report is the result of one run as a value: counts, latencies,
// invariant tallies, the first violations, bug A's imposters and the
// numeric backends' divergences, with its text and JSON renderings. The
// JSON form is byte-identical for the same scenario and seed.
//
// It holds no run logic: the engine fills a Report, and explain, sweeps
// and the command read it.
package report
