// Package invariant names the properties statesim checks and records
// their violations: the vocabulary every checker reports in and every
// reader (report, plots, properties) counts by.
//
// It imports nothing of statesim, so the step record, the scheduler-level
// checks (package check) and the cache-level checks (the symbolic backend)
// can all speak it without import cycles.
package invariant
