package check

import (
	"testing"

	"statesim/invariant"
	"statesim/sched"
	"statesim/sim"
	"statesim/step"
)

// time-monotonic cannot be broken by a scenario or a policy (the event
// loop owns the clock and every step takes at least 1 ns), so its minimal
// breaks are records fed to the checker: a step that starts 1 ns before
// the previous one ended, and a step that ends 1 ns before it started.
// Records exactly at the boundaries (a step starting the instant the
// previous ended, a step of zero length) are clean.

func steps(t *testing.T, recs ...step.Record) *invariant.Recorder {
	t.Helper()
	rec := invariant.NewRecorder(10)
	c := Scheduler{Limits: Limits{MaxNumBatchedTokens: 8, MaxNumSeqs: 2}, Rec: rec}
	for i := range recs {
		r := &recs[i]
		r.Step = int64(i)
		c.Step(r)
		c.Ended(r)
	}
	return rec
}

func onlyCounted(t *testing.T, rec *invariant.Recorder, inv invariant.Invariant, n int64) {
	t.Helper()
	for _, other := range invariant.All() {
		want := int64(0)
		if other == inv {
			want = n
		}
		if got := rec.Count(other); got != want {
			t.Errorf("%s counted %d, want %d", other, got, want)
		}
	}
}

func span(start, end sim.Time) step.Record { return step.Record{Start: start, End: end} }

func TestTimeMonotonicBrokenByOneNanosecond(t *testing.T) {
	onlyCounted(t, steps(t, span(0, 10), span(10, 10), span(10, 20)), invariant.TimeMonotonic, 0)
	onlyCounted(t, steps(t, span(0, 10), span(9, 20)), invariant.TimeMonotonic, 1)
	onlyCounted(t, steps(t, span(0, 10), span(10, 9)), invariant.TimeMonotonic, 1)
}

// The record-level budget and max_num_seqs checks at their boundaries:
// exactly the limit is clean, one over is one violation, and max_num_seqs
// counts running requests, not the rows scheduled.
func TestRecordLimitsAtTheirBoundaries(t *testing.T) {
	rows := func(n int) []step.Row {
		out := make([]step.Row, n)
		for i := range out {
			out[i] = step.Row{RequestID: int64(i), NumScheduled: 1, Status: sched.Running}
		}
		return out
	}
	onlyCounted(t, steps(t, step.Record{NumScheduledTokens: 8, Running: 2, Rows: rows(2)}), invariant.TokenBudget, 0)
	onlyCounted(t, steps(t, step.Record{NumScheduledTokens: 9, Running: 2, Rows: rows(2)}), invariant.TokenBudget, 1)
	onlyCounted(t, steps(t, step.Record{NumScheduledTokens: 2, Running: 3, Rows: rows(2)}), invariant.MaxNumSeqs, 1)
	onlyCounted(t, steps(t, step.Record{NumScheduledTokens: 3, Running: 2, Rows: rows(3)}), invariant.MaxNumSeqs, 0)
}

// Conservation from a record: a row scheduled one block short, or for a
// request that is not running, is one violation each.
func TestRecordRowConservation(t *testing.T) {
	short := step.Record{NumScheduledTokens: 1, Running: 1, Rows: []step.Row{{NumScheduled: 1, Status: sched.Running, BlocksShort: 1}}}
	onlyCounted(t, steps(t, short), invariant.BlockConservation, 1)
	waiting := step.Record{NumScheduledTokens: 1, Running: 1, Rows: []step.Row{{NumScheduled: 1, Status: sched.Waiting}}}
	onlyCounted(t, steps(t, waiting), invariant.BlockConservation, 1)
}
