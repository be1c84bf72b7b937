// Package sketch summarises a stream of non-negative samples (latencies)
// in memory that does not grow with the stream: a log-bucketed quantile
// sketch in the manner of DDSketch (Masson, Rim and Lee, VLDB 2019).
//
// Bound: every quantile it returns is within a relative error of Alpha
// (0.1%) of the true sample of that rank (the ceil(q·n)-th smallest);
// Count, Min and Max are exact. Samples below MinValue count as zero and
// are returned as 0.
//
// It is deterministic: the same samples in any order give the same
// buckets, so reports built on it are byte-identical run to run. It never
// allocates per sample once its bucket range has grown to the data's.
package sketch
