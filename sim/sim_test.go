package sim

import (
	"sort"
	"testing"
)

func TestEventOrder(t *testing.T) {
	var l Loop
	l.Schedule(10, 2, 1, 0)
	l.Schedule(10, 0, 2, 0)
	l.Schedule(5, 9, 3, 0)
	l.Schedule(10, 0, 4, 0) // same time and priority: insertion order
	var kinds []uint8
	for {
		e, ok := l.Next()
		if !ok {
			break
		}
		kinds = append(kinds, e.Kind)
	}
	want := []uint8{3, 2, 4, 1}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("order %v, want %v", kinds, want)
		}
	}
	if l.Now() != 10 {
		t.Errorf("now %v", l.Now())
	}
	if err := l.Schedule(9, 0, 0, 0); err == nil {
		t.Error("scheduling in the past must fail")
	}
}

func TestStreamsIndependentAndReproducible(t *testing.T) {
	a, b := NewStreams(42), NewStreams(42)
	x, y := a.Stream("workload"), b.Stream("workload")
	for i := 0; i < 100; i++ {
		if x.Uint64() != y.Uint64() {
			t.Fatal("same seed and name must give the same stream")
		}
	}
	if a.Stream("workload").Uint64() == a.Stream("sampling").Uint64() {
		t.Error("different names should give different streams")
	}
	if NewStreams(43).Stream("workload").Uint64() == a.Stream("workload").Uint64() {
		t.Error("different seeds should give different streams")
	}
}

// The loop pops events in (time, priority, sequence) order whatever the
// insertion order: checked against a sort of the same events.
func TestEventOrderMatchesSort(t *testing.T) {
	var l Loop
	type key struct {
		at  Time
		p   Priority
		seq int64
	}
	var want []key
	x := uint64(12345)
	for i := int64(0); i < 500; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		at, p := Time(x>>58), Priority(x>>40&3)
		if err := l.Schedule(at, p, 0, i); err != nil {
			t.Fatal(err)
		}
		want = append(want, key{at, p, i})
	}
	sort.SliceStable(want, func(i, j int) bool {
		if want[i].at != want[j].at {
			return want[i].at < want[j].at
		}
		return want[i].p < want[j].p
	})
	for i, w := range want {
		e, ok := l.Next()
		if !ok || e.At != w.at || e.Priority != w.p || e.Arg != w.seq {
			t.Fatalf("event %d = %+v, want %+v", i, e, w)
		}
	}
	if l.Len() != 0 {
		t.Fatalf("%d events left", l.Len())
	}
}

// AdvanceTo moves the clock forward only.
func TestAdvanceTo(t *testing.T) {
	var l Loop
	if err := l.AdvanceTo(7); err != nil || l.Now() != 7 {
		t.Fatalf("advance to 7: %v, now %v", err, l.Now())
	}
	if err := l.AdvanceTo(3); err == nil || l.Now() != 7 {
		t.Fatalf("advance back to 3: %v, now %v", err, l.Now())
	}
	if err := l.Schedule(5, 0, 0, 0); err == nil {
		t.Fatal("an event before the advanced clock must be refused")
	}
}
