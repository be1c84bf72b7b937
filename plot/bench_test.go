package plot

import (
	"statesim/engine"
	"testing"

	"statesim/scenarios"
)

// BenchmarkImposterCharts records the imposter run and draws its four
// charts (PNG + SVG); target: well under a second.
func BenchmarkImposterCharts(b *testing.B) {
	sc, err := scenarios.Load("imposter", nil)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		rec := NewRecorder()
		rep, err := engine.Run(sc, engine.Options{Observe: rec.Observe})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Write(rec.Done(rep, sc.Engine.MaxNumBatchedTokens), dir); err != nil {
			b.Fatal(err)
		}
	}
}
