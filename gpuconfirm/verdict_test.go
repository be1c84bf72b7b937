package gpuconfirm

import (
	"math"
	"testing"

	"statesim/backend/cuda"
	"statesim/report"
)

func TestParityPassNeedsBothComparisonsWithinTolerance(t *testing.T) {
	good := Run{Stats: report.DivergenceStats{TokensCompared: 100, MaxDelta: 2e-5}, GPU: cuda.Summary{Parity: &cuda.Parity{TokensCompared: 100, MaxDelta: 3e-5}}}
	if !parityPass(&good, 1e-3) {
		t.Fatal("a run within tolerance of reference and mock fails")
	}
	for name, spoil := range map[string]func(r *Run){
		"nothing compared":       func(r *Run) { r.Stats.TokensCompared = 0 },
		"a divergent request":    func(r *Run) { r.Stats.RequestsDivergent = 1 },
		"far from the reference": func(r *Run) { r.Stats.MaxDelta = 2e-3 },
		"far from the mock":      func(r *Run) { r.GPU.Parity = &cuda.Parity{TokensCompared: 100, MaxDelta: 2e-3} },
		"no shadow":              func(r *Run) { r.GPU.Parity = nil },
	} {
		r := good
		spoil(&r)
		if parityPass(&r, 1e-3) {
			t.Errorf("%s: passes", name)
		}
	}
}

func TestBugAPassNeedsEveryImposterFlaggedByBothEngines(t *testing.T) {
	for _, c := range []struct {
		name           string
		imp, gpu, mock []int64
		want           bool
	}{
		{"both flag the imposters and a victim", []int64{3, 9}, []int64{3, 5, 9}, []int64{3, 5, 9}, true},
		{"no imposters", nil, nil, nil, false},
		{"the engines disagree", []int64{3}, []int64{3, 5}, []int64{3}, false},
		{"an imposter not divergent", []int64{3, 9}, []int64{3}, []int64{3}, false},
	} {
		r := Run{Imposters: c.imp, DivergentGPU: c.gpu, DivergentMock: c.mock}
		if got := bugAPass(&r); got != c.want {
			t.Errorf("%s: pass %v, want %v", c.name, got, c.want)
		}
	}
}

func TestBugBPassReadsTheIndexWidth(t *testing.T) {
	wrapped := BugB{Bits: 32, Slot: 900, Predicted: 12, Victim: 12, IntendedStale: true, VictimClobbered: true, DecodeReadStale: true}
	clean := BugB{Bits: 64, Slot: 900, Predicted: 900, Victim: 12, DecodeVsFinal: 1e-7}
	if !bugBPass(&wrapped) || !bugBPass(&clean) {
		t.Fatal("the predicted outcomes fail")
	}
	// Each half of the prediction matters.
	for name, r := range map[string]BugB{
		"32-bit, victim intact":         {Bits: 32, Slot: 900, Predicted: 12, Victim: 12, IntendedStale: true, DecodeReadStale: true},
		"32-bit, decode read the state": {Bits: 32, Slot: 900, Predicted: 12, Victim: 12, IntendedStale: true, VictimClobbered: true},
		"32-bit, state not where said":  {Bits: 32, Slot: 900, Predicted: 12, Victim: 12, IntendedStale: true, VictimClobbered: true, DecodeReadStale: true, FinalAtPredicted: 0.5},
		"64-bit, victim clobbered":      {Bits: 64, Slot: 900, Predicted: 900, Victim: 12, VictimClobbered: true},
		"64-bit, slot left stale":       {Bits: 64, Slot: 900, Predicted: 900, Victim: 12, IntendedStale: true},
		"64-bit, decode off the state":  {Bits: 64, Slot: 900, Predicted: 900, Victim: 12, DecodeVsFinal: 0.3},
	} {
		if bugBPass(&r) {
			t.Errorf("%s: passes", name)
		}
	}
}

// The plan is the simulator's prediction: under 32 bits the slot's state
// lands on the victim's page, under 64 bits on the slot's own.
func TestPlanBugBPredictsTheVictim(t *testing.T) {
	shape, err := BugBShape()
	if err != nil {
		t.Fatal(err)
	}
	p32, err := planBugB(shape, 32, 64)
	if err != nil {
		t.Fatal(err)
	}
	p64, err := planBugB(shape, 64, 64)
	if err != nil {
		t.Fatal(err)
	}
	if p32.Slot != p64.Slot || p32.Victim != p64.Victim {
		t.Fatalf("slot %d/%d, victim %d/%d: both widths must use the same slot and victim", p32.Slot, p64.Slot, p32.Victim, p64.Victim)
	}
	if int64(p32.Slot)*p32.StrideElems+p32.StateOffset <= math.MaxUint32 {
		t.Errorf("slot %d × stride %d does not pass 2^32 elements", p32.Slot, p32.StrideElems)
	}
	if p32.Predicted != p32.Victim || p32.Victim <= 0 || p32.Victim >= p32.Slot {
		t.Errorf("32-bit: predicted block %d, victim %d, slot %d: want the victim, a live block below the slot", p32.Predicted, p32.Victim, p32.Slot)
	}
	if p64.Predicted != p64.Slot || p64.PredictedLast != p64.Slot {
		t.Errorf("64-bit: predicted blocks %d..%d, want the slot %d", p64.Predicted, p64.PredictedLast, p64.Slot)
	}
	if p32.BufferGiB < 16 {
		t.Errorf("buffer %.1f GiB: a slot past the 32-bit wrap of float32 elements needs at least 16 GiB", p32.BufferGiB)
	}
}

// One token from zero state: h = B·dt·x, and the decode from zero adds
// one more step the same way.
func TestReferenceScanFromZero(t *testing.T) {
	in := drawScan(&splitmix{7}, 1, 3, 4, 2)
	h := in.finalState()
	for d := 0; d < 3; d++ {
		for n := 0; n < 4; n++ {
			want := float64(in.dbc[2+n]) * in.dt(0, d) * float64(in.xc[d])
			if math.Abs(h[d*4+n]-want) > 1e-12 {
				t.Fatalf("h[%d][%d] = %g, want B·dt·x = %g", d, n, h[d*4+n], want)
			}
		}
	}
	if relErr([]float32{1, 2}, []float64{1, 2}) != 0 || !math.IsInf(relErr([]float32{float32(math.NaN())}, []float64{1}), 1) {
		t.Error("relErr: 0 for equal vectors, +Inf for a NaN")
	}
}

func TestStatePassReadsTheRunKind(t *testing.T) {
	par := cuda.Summary{Parity: &cuda.Parity{TokensCompared: 10, MaxDelta: 1e-5}}
	st := report.DivergenceStats{TokensCompared: 10, MaxDelta: 1e-5}
	for _, c := range []struct {
		name string
		r    Run
		want bool
	}{
		{"parity within tolerance", Run{Kind: "parity", Stats: st, GPU: par}, true},
		{"parity with a stale reader", Run{Kind: "parity", Stats: st, GPU: par, StaleReaders: []int64{2}}, false},
		{"clean twin, a divergent request", Run{Kind: "clean", Stats: report.DivergenceStats{TokensCompared: 10, RequestsDivergent: 1}, GPU: par}, false},
		{"bug: readers = divergent on both", Run{Kind: "bug", StaleReaders: []int64{1, 4}, StaleWritten: []int64{1, 4}, DivergentGPU: []int64{1, 4}, DivergentMock: []int64{1, 4}}, true},
		{"bug: a zeros reader need not diverge", Run{Kind: "bug", StaleReaders: []int64{1, 4}, StaleWritten: []int64{1}, DivergentGPU: []int64{1}, DivergentMock: []int64{1}}, true},
		{"bug: the engines disagree", Run{Kind: "bug", StaleReaders: []int64{1, 4}, StaleWritten: []int64{1, 4}, DivergentGPU: []int64{1, 4}, DivergentMock: []int64{1}}, false},
		{"bug: a reader of written bytes the GPU misses", Run{Kind: "bug", StaleReaders: []int64{1, 4}, StaleWritten: []int64{1, 4}, DivergentGPU: []int64{1}, DivergentMock: []int64{1}}, false},
		{"bug: a divergent request without a stale read", Run{Kind: "bug", StaleReaders: []int64{1}, StaleWritten: []int64{1}, DivergentGPU: []int64{1, 3}, DivergentMock: []int64{1, 3}}, false},
		{"bug: nothing diverges", Run{Kind: "bug", StaleReaders: []int64{1}}, false},
		{"no kind", Run{Stats: st, GPU: par}, false},
	} {
		if got := statePass(&c.r, 1e-3); got != c.want {
			t.Errorf("%s: pass %v, want %v", c.name, got, c.want)
		}
	}
}
