package sweep

import (
	"context"
	"testing"
)

// BenchmarkGrid runs a 16-cell grid of similar cells on one worker and on
// two; the ratio is the parallel efficiency (target: > 1.6× on two idle
// cores). Cells are handed out in grid order, so a grid whose last cell
// dominates (bug-b-rollouts) speeds up less.
func BenchmarkGrid(b *testing.B) {
	s := small()
	for _, w := range []int{1, 2} {
		b.Run(map[int]string{1: "workers=1", 2: "workers=2"}[w], func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := s.Run(context.Background(), Options{Workers: w}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
