package sketch

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// exact is the ceil(q·n)-th smallest of sorted xs.
func exact(xs []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(i, 0)]
}

func TestQuantilesWithinAlpha(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 7, 100, 10000} {
		var s Sketch
		xs := make([]float64, n)
		for i := range xs {
			// Latencies from a microsecond to minutes, some exactly 0.
			xs[i] = math.Exp(rng.NormFloat64()*4 - 5)
			if rng.IntN(20) == 0 {
				xs[i] = 0
			}
			s.Add(xs[i])
		}
		slices.Sort(xs)
		for _, q := range []float64{0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1} {
			want, got := exact(xs, q), s.Quantile(q)
			if want == 0 {
				if got != 0 {
					t.Errorf("n %d q %g: got %g, want 0", n, q, got)
				}
				continue
			}
			if rel := math.Abs(got-want) / want; rel > Alpha*(1+1e-9) {
				t.Errorf("n %d q %g: got %g, want %g (relative error %g > %g)", n, q, got, want, rel, Alpha)
			}
		}
		if s.Count() != uint64(n) || s.Min() != xs[0] || s.Max() != xs[n-1] {
			t.Errorf("n %d: count %d min %g max %g, want %d %g %g", n, s.Count(), s.Min(), s.Max(), n, xs[0], xs[n-1])
		}
	}
}

func TestOrderAndMergeDoNotMatter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	xs := make([]float64, 5000)
	for i := range xs {
		xs[i] = rng.ExpFloat64() * 0.05
	}
	var a, b, left, right Sketch
	for i, x := range xs {
		a.Add(x)
		if i%2 == 0 {
			left.Add(x)
		} else {
			right.Add(x)
		}
	}
	rng.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	for _, x := range xs {
		b.Add(x)
	}
	left.Merge(&right)
	for _, q := range []float64{0.5, 0.9, 0.99} {
		if a.Quantile(q) != b.Quantile(q) || a.Quantile(q) != left.Quantile(q) {
			t.Errorf("q %g: %g in order, %g shuffled, %g merged", q, a.Quantile(q), b.Quantile(q), left.Quantile(q))
		}
	}
	if !reflect.DeepEqual(a.counts, b.counts) || a.offset != b.offset {
		t.Error("the same samples in another order gave other buckets")
	}
}

func TestEmptyAndBadSamples(t *testing.T) {
	var s Sketch
	if s.Quantile(0.5) != 0 || s.Count() != 0 {
		t.Fatal("empty sketch must answer 0")
	}
	s.Add(math.NaN())
	s.Add(-1)
	if s.Count() != 2 || s.Quantile(1) != 0 || s.Max() != 0 {
		t.Errorf("NaN and negative samples must count as zero: count %d q1 %g", s.Count(), s.Quantile(1))
	}
}

// Memory stays bounded by the value range, not the number of samples.
func TestBucketsBoundedByRange(t *testing.T) {
	var s Sketch
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		s.Add(1e-6 + rng.Float64()*1e3) // a microsecond to ~17 minutes
	}
	// ln(1e9)/ln(γ) ≈ 10,362 buckets at most for this range.
	if n := len(s.counts); n > 10400 {
		t.Errorf("%d buckets for a 1e9 value range", n)
	}
}

func BenchmarkAdd(b *testing.B) {
	var s Sketch
	x := 0.0123
	for b.Loop() {
		s.Add(x)
		x *= 1.0001
		if x > 10 {
			x = 0.0123
		}
	}
}
