// Package outfile writes statesim's result files so that a reader never
// sees half of one: a sweep's cells and tables, a check run's summary. A
// killed process leaves the old file or none, never a torn one, which is
// what lets `sweep merge` and `check merge` tell a finished shard from an
// unfinished one.
package outfile
