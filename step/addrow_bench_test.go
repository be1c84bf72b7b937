package step

import "testing"

// BenchmarkAddRow44 builds a 44-row record, the synthetic million's mean
// batch, as the engine does every step: reused rows, seven state blocks.
func BenchmarkAddRow44(b *testing.B) {
	var r Record
	for b.Loop() {
		r.Reset()
		for i := range 44 {
			x := r.AddRow()
			x.RequestID, x.NumScheduled, x.NumComputed = int64(i), 1, 100
			x.StateBlocks = append(x.StateBlocks, 1, 2, 3, 4, 5, 6, 7)
		}
	}
}
