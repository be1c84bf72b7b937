package engine

import (
	"statesim/report"
	"testing"

	"statesim/invariant"
	"statesim/scenarios"
)

func mustRun(t *testing.T, name string, sets ...string) *report.Report {
	t.Helper()
	sc, err := scenarios.Load(name, sets)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Finished != rep.Requests || rep.Requests == 0 {
		t.Fatalf("%s: %d of %d requests finished", name, rep.Finished, rep.Requests)
	}
	return rep
}

// The built-in incident: a brand-new request given 1 token, classified as
// a decode, reading a slot left by another request.
func TestImposterIsCaught(t *testing.T) {
	rep := mustRun(t, "imposter")
	if len(rep.Imposters) == 0 {
		t.Fatalf("no imposter found; invariants %+v", rep.Invariants)
	}
	im := rep.Imposters[0]
	if im.NumScheduled != 1 || im.PrevOwner < 0 || im.PrevOwner == im.RequestID {
		t.Errorf("imposter %+v: want 1 scheduled token and another request's slot", im)
	}
	if rep.Count(invariant.StaleSlotRead) == 0 || rep.Count(invariant.NoDecodeBeforePrefill) == 0 {
		t.Errorf("stale reads %d, decodes before prefill %d", rep.Count(invariant.StaleSlotRead), rep.Count(invariant.NoDecodeBeforePrefill))
	}
	// The violation names the same request, step and slot.
	found := false
	for _, v := range rep.Violations {
		if v.Invariant == invariant.StaleSlotRead && v.RequestID == im.RequestID && v.Step == im.Step && v.Slot == im.Slot && v.PrevOwner == im.PrevOwner {
			found = true
		}
	}
	if !found {
		t.Errorf("no stale-slot-read violation matches the imposter %+v in %+v", im, rep.Violations)
	}
}

// The same workload is clean under the fix, on an attention-only model
// (misclassified rows, no stale reads) and under V0.
func TestControlsAreClean(t *testing.T) {
	for _, name := range []string{"imposter-fixed", "imposter-attention-only", "imposter-v0"} {
		rep := mustRun(t, name)
		if n := rep.TotalViolations(); n != 0 {
			t.Errorf("%s: %d violations: %+v", name, n, rep.Violations)
		}
		if name == "imposter-attention-only" && rep.MisclassifiedRows == 0 {
			t.Errorf("%s: the buggy reorder should still misclassify rows (reported for information)", name)
		}
	}
	// The seeds' diagnostic: forcing every row through prefill hides bug A.
	if rep := mustRun(t, "imposter", "engine.force_prefill_path=true"); rep.TotalViolations() != 0 {
		t.Errorf("force_prefill_path: %d violations", rep.TotalViolations())
	}
}

// Memory pressure is the lever for bug A: with plenty of memory no slot is
// recycled within the run, so the misrouted request reads zeros (harmless).
func TestBugANeedsRecycledSlots(t *testing.T) {
	rep := mustRun(t, "imposter", "engine.gpu_memory_utilization=0.9")
	if rep.Count(invariant.StaleSlotRead) != 0 {
		t.Errorf("at 0.9 no slot should be reused: %d stale reads", rep.Count(invariant.StaleSlotRead))
	}
}

// Bug B: the wrapped write, then the stale read of the slot it missed; 64
// bits fixes it, and less memory makes the bad slots unreachable.
func TestWrap32(t *testing.T) {
	rep := mustRun(t, "wrap32")
	if rep.Count(invariant.WrongAddressWrite) == 0 || rep.Count(invariant.StaleSlotRead) == 0 {
		t.Fatalf("wrap32: wrong writes %d stale reads %d", rep.Count(invariant.WrongAddressWrite), rep.Count(invariant.StaleSlotRead))
	}
	var w, s *invariant.Violation
	for i := range rep.Violations {
		v := &rep.Violations[i]
		if v.Invariant == invariant.WrongAddressWrite && w == nil {
			w = v
		}
		if v.Invariant == invariant.StaleSlotRead && s == nil {
			s = v
		}
	}
	if w.Slot < rep.Cache.FirstWrappingSlot {
		t.Errorf("wrapped write at slot %d below the threshold %d", w.Slot, rep.Cache.FirstWrappingSlot)
	}
	if s.Step <= w.Step {
		t.Errorf("the stale read (step %d) must follow the wrapped write (step %d)", s.Step, w.Step)
	}
	if rep := mustRun(t, "wrap32", "engine.state_index_bits=64"); rep.TotalViolations() != 0 {
		t.Errorf("64-bit: %d violations", rep.TotalViolations())
	}
	if rep := mustRun(t, "wrap32", "engine.gpu_memory_utilization=0.4"); rep.TotalViolations() != 0 || rep.Cache.NumGPUBlocks > int(rep.Cache.FirstWrappingSlot) {
		t.Errorf("less memory: %d blocks, %d violations", rep.Cache.NumGPUBlocks, rep.TotalViolations())
	}
}

// A prompt whose first chunk can never get blocks stalls the engine: the
// liveness invariant reports it instead of looping forever.
func TestLivenessReportsStall(t *testing.T) {
	sc, err := scenarios.Load("imposter", []string{"engine.num_gpu_blocks_override=8", "workload.num_prompts=3", "workload.batch_size=3"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count(invariant.Liveness) == 0 || rep.Finished == rep.Requests {
		t.Fatalf("want a liveness violation: finished %d of %d, %+v", rep.Finished, rep.Requests, rep.Invariants)
	}
	sc, _ = scenarios.Load("imposter", []string{"checks.max_steps=10"})
	if rep, _ := Run(sc, Options{}); rep.Count(invariant.Liveness) != 1 || rep.Steps != 10 {
		t.Errorf("max_steps: %d steps, %d liveness violations", rep.Steps, rep.Count(invariant.Liveness))
	}
}
