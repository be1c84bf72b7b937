package mock

import (
	"math"
	"slices"
	"testing"
)

func TestExpAccuracy(t *testing.T) {
	worst := 0.0
	for x := -745.0; x < 709; x += 0.0137 {
		got, want := exp64(x), math.Exp(x)
		if want == 0 || math.IsInf(want, 0) {
			continue
		}
		worst = max(worst, math.Abs(got-want)/want)
	}
	if worst > 1e-15 {
		t.Fatalf("exp64 worst relative error %g", worst)
	}
	bad, n := 0, 0
	for x := float32(-103); x < 88; x += 0.00731 {
		n++
		if exp32(x) != float32(math.Exp(float64(x))) {
			bad++
		}
	}
	// Rounding the 1e-8-accurate value can differ from rounding the exact
	// one only next to a float32 rounding boundary.
	if bad > n/1000 {
		t.Errorf("exp32 differs from rounded math.Exp at %d points", bad)
	}
	t.Logf("exp32 differs from rounded math.Exp at %d of %d points", bad, n)
}

// TestExpIntoIsExp32 holds expInto to exp32 bit for bit on a sweep of
// float32 bit patterns (both signs, every exponent) and the edge values.
func TestExpIntoIsExp32(t *testing.T) {
	src := []float32{0, float32(math.Copysign(0, -1)), expMax, expMin, 88.8, -104,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for b := uint64(0); b < 1<<32; b += 4099 {
		src = append(src, math.Float32frombits(uint32(b)))
	}
	dst := make([]float32, len(src))
	expInto(dst, src)
	for i, x := range src {
		if got, want := dst[i], exp32(x); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("expInto(%g) = %g (%#x), exp32 %g (%#x)", x, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

// TestVectorActivations holds siluInto and softplusInto to their scalar
// definitions through exp32, bit for bit, NaN and infinities included.
func TestVectorActivations(t *testing.T) {
	src := []float32{0, 20, 20.000002, 19.999998, 88.8, -104, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for x := float32(-120); x < 120; x += 0.0731 {
		src = append(src, x)
	}
	sil, sp, tmp := make([]float32, len(src)), slices.Clone(src), make([]float32, len(src))
	siluInto(sil, src, tmp)
	softplusInto(sp, tmp)
	for i, x := range src {
		if want := x / (1 + exp32(-x)); math.Float32bits(sil[i]) != math.Float32bits(want) {
			t.Fatalf("siluInto(%g) = %g, x/(1+exp32(-x)) = %g", x, sil[i], want)
		}
		want := x
		if !(x > 20) {
			want = float32(math.Log1p(float64(exp32(x))))
		}
		if math.Float32bits(sp[i]) != math.Float32bits(want) {
			t.Fatalf("softplusInto(%g) = %g, want %g", x, sp[i], want)
		}
	}
}
