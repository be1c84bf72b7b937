package sim

import "testing"

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
