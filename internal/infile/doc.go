// Package infile opens and reads statesim's input files within a bound: a
// scenario, sweep or config.json is read whole up to a size cap, a named
// pipe without a writer is not waited on forever, and a gzipped stream may
// expand only so far. Every reader of a user's file goes through it, so a
// path such as /dev/zero or a FIFO is an error, never an out-of-memory or
// a hang.
package infile
