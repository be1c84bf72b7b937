package plot

import (
	"testing"

	"statesim/invariant"
)

// synthetic makes step i of a long run: a budget burst every 1000 steps,
// a one-token cut at step 4321 and a violation at 7000.
func synthetic(i int64) Step {
	st := Step{Step: i, StartNS: i * 10, EndNS: i*10 + 9, Decode: int32(i % 7), Rows: int32(i % 7),
		Waiting: int32(i % 50), Running: int32(i % 31), BlocksHeld: int32(i % 100), SlotsHeld: int32(i % 13),
		FreeQueue: int32(1000 - i%100), HighestSlot: int64(i / 10), Preempted: int32(i % 3)}
	if i%1000 == 0 {
		st.Prefill = 16000
	}
	if i == 4321 {
		st.NewCut, st.CutNew, st.OneToken = 1, 1, 1
	}
	if i == 7000 {
		st.Violations[invariant.StaleSlotRead] = 2
	}
	return st
}

func TestSeriesKeepsBoundedBinsAndExactMarkers(t *testing.T) {
	var s series
	const n = 100_000
	var pre int64
	for i := int64(0); i < n; i++ {
		st := synthetic(i)
		pre += int64(st.Preempted)
		s.add(&st)
	}
	if len(s.Bins) > maxKeptBins || len(s.Bins) < maxKeptBins/2 {
		t.Fatalf("%d bins", len(s.Bins))
	}
	var steps, binPre int64
	next := int64(0)
	for i, b := range s.Bins {
		if b.FirstStep != next || b.LastStep-b.FirstStep+1 != b.Steps || (i < len(s.Bins)-1 && b.Steps != s.BinWidth) {
			t.Fatalf("bin %d covers %d..%d (%d steps), width %d", i, b.FirstStep, b.LastStep, b.Steps, s.BinWidth)
		}
		next = b.LastStep + 1
		steps += b.Steps
		binPre += b.Preempted
		// Every bin holding a burst step shows the burst.
		if burst := (b.LastStep/1000)*1000 >= b.FirstStep; burst && b.Busiest.Prefill != 16000 {
			t.Fatalf("bin %d..%d hides its burst: %+v", b.FirstStep, b.LastStep, b.Busiest)
		}
		if b.HighestSlot != b.LastStep/10 || b.MaxWaiting < int32(min(49, b.Steps-1)) {
			t.Fatalf("bin %d..%d: highest %d, max waiting %d", b.FirstStep, b.LastStep, b.HighestSlot, b.MaxWaiting)
		}
	}
	if steps != n || s.NumSteps != n || binPre != pre {
		t.Fatalf("bins cover %d steps (want %d), preemptions %d (want %d)", steps, n, binPre, pre)
	}
	if len(s.OneToken) != 1 || s.OneToken[0] != (Marker{4321, 1}) {
		t.Fatalf("one-token markers %v", s.OneToken)
	}
	if v := s.Violations[invariant.StaleSlotRead]; len(v) != 1 || v[0] != (Marker{7000, 2}) {
		t.Fatalf("violation markers %v", v)
	}
	// The zoom moved from the one-token cut to the violation.
	if len(s.Zoom) != zoomSteps || s.Zoom[zoomBefore].Step != 7000 || s.Zoom[0].Step != 7000-zoomBefore {
		t.Fatalf("zoom %d steps from %d", len(s.Zoom), s.Zoom[0].Step)
	}
	s.addLate(invariant.Liveness, 3)
	if v := s.Violations[invariant.Liveness]; len(v) != 1 || v[0] != (Marker{n - 1, 3}) {
		t.Fatalf("late violations %v", v)
	}
}
