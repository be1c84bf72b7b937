package mock

import (
	"math/rand/v2"
	"strings"
	"testing"

	"statesim/invariant"
	"statesim/model"
	"statesim/sched"
)

// Bug B with a 16-bit index so it wraps at small slot counts: the tiny
// model's stride is 1024 elements, so slots from ceil(2^16/1024) = 64 on
// have their prefill state writes land 64 pages lower. The free queue
// cycles through all 100 block ids, so later requests get such slots. The
// fix under test is sched.Fixed, so bug A is out of the picture.
func wrapWorkload(t *testing.T, bits uint) *engine {
	rng := rand.New(rand.NewPCG(2026, 3))
	e := newEngine(t, engineCfg{numBlocks: 100, budget: 48, maxSeqs: 6, version: sched.Fixed, bits: bits, weightSeed: 4})
	e.run(randomArrivals(rng, 60, 40, 12, 2))
	return e
}

func TestBugBWrappedWriteDiverges(t *testing.T) {
	e := wrapWorkload(t, 16)
	if first := e.sym.Index.FirstWrappingSlot(); first != 64 {
		t.Fatalf("first wrapping slot %d, want 64", first)
	}
	holdsBugB(t, e)
}

// holdsBugB holds a wrapping run to the symbolic backend: a writer that
// decodes from its own stale slot diverges, a request reading a slot
// another's wrapped write clobbered diverges, and every divergent request
// has a recorded corruption.
func holdsBugB(t *testing.T, e *engine) {
	t.Helper()
	writers := map[int64]bool{}
	for _, v := range e.viol {
		if v.Invariant == invariant.WrongAddressWrite {
			writers[v.RequestID] = true
		}
	}
	if len(writers) == 0 {
		t.Fatalf("no wrapped write happened (highest slot %d)", e.sym.Stats.HighestSlot)
	}
	divs := e.divergent()
	if len(divs) == 0 {
		t.Fatalf("%d requests made wrapped writes but none diverged", len(writers))
	}
	// The writer's own slot is left stale: when its next step reads the
	// slot, the request diverges.
	stale := e.staleDecodeReaders()
	n := 0
	for id := range writers {
		if stale[id] {
			n++
			if _, ok := divs[id]; !ok {
				t.Errorf("request %d wrote through a wrapped index, then decoded from its stale slot, but did not diverge", id)
			}
		}
	}
	if n == 0 {
		t.Fatalf("no writer of a wrapped state read its stale slot back")
	}
	// A request whose slot another request's wrapped write clobbered
	// diverges too.
	victims := 0
	for _, v := range e.viol {
		if v.Invariant == invariant.StaleSlotRead && v.PrevOwner != v.RequestID && strings.Contains(v.Detail, "clobbered") {
			if _, ok := divs[v.RequestID]; !ok {
				t.Errorf("request %d read a slot clobbered by request %d but did not diverge", v.RequestID, v.PrevOwner)
			}
			victims++
		}
	}
	if victims == 0 {
		t.Errorf("no request read a clobbered slot")
	}
	for id, d := range divs {
		if d.CorruptStep < 0 {
			t.Errorf("request %d diverged (%+v) with no recorded corruption", id, d)
		}
	}
	t.Logf("%d wrapped writers, %d divergent of %d; violations: %d wrong-address writes, %d stale reads",
		len(writers), len(divs), e.mk.Stats().RequestsCompared, e.rec.Count(invariant.WrongAddressWrite), e.rec.Count(invariant.StaleSlotRead))
}

// bf16Hybrid is tiny-hybrid in bfloat16: the mock runs it as its tiny
// stand-in over the layout's block ids, as it runs jamba-reasoning-3b.
func bf16Hybrid(t *testing.T) model.Shape {
	s := tinyShape(t)
	s.Name, s.DType = "tiny-hybrid-bf16", "bfloat16"
	if Exact(&s) {
		t.Fatal("a bfloat16 shape runs exactly")
	}
	return s
}

// Bug B on the tiny stand-in: with 32-token blocks the bfloat16 model's
// page is 4096 bytes, a stride of 1024 elements, a power of two (as
// prefix caching's padded 4 MiB pages make jamba-reasoning-3b's), so
// every wrapped address is another page's state: the write lands on that
// page's tiny state, and the page's next reader reads it.
func TestBugBTinyStandIn(t *testing.T) {
	shape := bf16Hybrid(t)
	for _, bits := range []uint{16, 64} {
		rng := rand.New(rand.NewPCG(2026, 3))
		e := newEngine(t, engineCfg{shape: &shape, blockSize: 32, numBlocks: 120, budget: 48, maxSeqs: 6, version: sched.Fixed, bits: bits, weightSeed: 4})
		if e.sym.Index.Stride != 1024 {
			t.Fatalf("stride %d, want 1024", e.sym.Index.Stride)
		}
		e.run(randomArrivals(rng, 60, 40, 12, 2))
		if e.sym.Stats.HighestSlot < 64 {
			t.Fatalf("highest slot %d: the workload does not reach the wrapping slots", e.sym.Stats.HighestSlot)
		}
		if bits == 64 {
			if st := e.mk.Stats(); e.rec.Total() != 0 || st.RequestsDivergent != 0 || st.MaxDelta != 0 {
				t.Fatalf("64-bit: %d violations, stats %+v; want clean and exact", e.rec.Total(), st)
			}
			continue
		}
		holdsBugB(t, e)
	}
}

// A wrapped address inside another page's bytes (48-token blocks: a
// 768-element stride) has no faithful place on the tiny pages: the run
// stops with an error naming the slot, not a guess.
func TestBugBTinyStandInRefusesMidPage(t *testing.T) {
	shape := bf16Hybrid(t)
	rng := rand.New(rand.NewPCG(2026, 3))
	e := newEngine(t, engineCfg{shape: &shape, blockSize: 16, numBlocks: 100, budget: 48, maxSeqs: 6, version: sched.Fixed, bits: 16, weightSeed: 4})
	if e.sym.Index.Stride != 768 {
		t.Fatalf("stride %d, want 768", e.sym.Index.Stride)
	}
	err := e.runErr(randomArrivals(rng, 60, 40, 12, 2))
	if err == nil || !strings.Contains(err.Error(), "tiny stand-in's pages cannot place it") {
		t.Fatalf("got %v, want the tiny stand-in's refusal", err)
	}
}

func TestBugB64BitClean(t *testing.T) {
	e := wrapWorkload(t, 64)
	if e.sym.Stats.HighestSlot < 64 {
		t.Fatalf("highest slot %d: the workload does not reach the wrapping slots", e.sym.Stats.HighestSlot)
	}
	if n := e.rec.Total(); n != 0 {
		t.Fatalf("%d violations: %v", n, e.viol[0])
	}
	if st := e.mk.Stats(); st.RequestsDivergent != 0 || st.MaxDelta != 0 {
		t.Fatalf("stats %+v, want Δ exactly 0", st)
	}
}
