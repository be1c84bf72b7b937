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

// TestExp64ScalesAsLdexp holds exp64's fast scaling to math.Ldexp of the
// same polynomial, bit for bit, across the whole range (the subnormal
// results included, which take Ldexp itself).
func TestExp64ScalesAsLdexp(t *testing.T) {
	ldexp := func(x float64) float64 {
		k := math.Floor(float64(x*log2e) + 0.5)
		r := float64(x-float64(k*ln2Hi)) - float64(k*ln2Lo)
		p := 1.0 / 6227020800
		for _, c := range [...]float64{1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880,
			1.0 / 40320, 1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1, 1} {
			p = float64(p*r) + c
		}
		return math.Ldexp(p, int(k))
	}
	for x := -745.0; x < 709.78; x += 0.000731 {
		if got, want := exp64(x), ldexp(x); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("exp64(%g) = %g, Ldexp form %g", x, got, want)
		}
	}
}
