// Package trace reads request-arrival traces as a stream of Records: the
// Azure LLM inference trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens),
// JSON Lines with configurable field names (Mooncake's, with the hash_ids
// that name each 512-token chunk of a prompt: HashIDReader), and a seeded
// synthetic generator. The simulator's trace workload and the replay benchmarks
// consume it.
//
// Arrival times are offsets from the first record (which arrives at 0),
// divided by Options.RateScale. Records come in file order and time must
// never run backwards.
//
// Every bad line is an error of the form "NAME:LINE: field FIELD: problem"
// (a *ParseError; the field part is absent when the whole line is at fault).
// A reader never panics, never skips or truncates a bad line, and stops at
// the first error; only blank lines are skipped. A prompt needs at least one
// token; zero output tokens are accepted and left to the caller to clamp,
// since traces record them and the policy belongs to the simulator.
//
// It must never load a whole trace: readers hold one line at a time (at most
// 1 MiB), and the CSV path allocates nothing per record, so an hour of
// production traffic or a million synthetic requests replay in memory
// bounded by the buffer, not the trace.
//
// The Azure trace is CC-BY 4.0: Patel et al., "Splitwise: Efficient
// generative LLM inference using phase splitting", ISCA 2024.
package trace
