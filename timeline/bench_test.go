package timeline

import (
	"io"
	"statesim/engine"
	"testing"

	"statesim/scenarios"
)

// countingWriter measures the timeline's size.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkImposterTimeline is the imposter run (1,024 requests, ~20k
// steps) with a timeline; target: under 2× the run without one, and
// under 10 MB.
func BenchmarkImposterTimeline(b *testing.B) {
	sc, err := scenarios.Load("imposter", nil)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for i := 0; i < b.N; i++ {
		cw := &countingWriter{}
		tl := New(cw)
		rep, err := engine.Run(sc, engine.Options{Observe: tl.Observe})
		if err != nil {
			b.Fatal(err)
		}
		tl.Violations(rep.Violations)
		if err := tl.Close(); err != nil {
			b.Fatal(err)
		}
		size = cw.n
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB/file")
}

// BenchmarkImposterPlain is the same run without a timeline, for scale.
func BenchmarkImposterPlain(b *testing.B) {
	sc, err := scenarios.Load("imposter", nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := engine.Run(sc, engine.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

var _ io.Writer = (*countingWriter)(nil)
