package mock

import "math"

// Float helpers with a fixed operation order. Every product that feeds a
// sum is converted to float32 explicitly: Go may otherwise fuse a*b+c into
// one FMA on some architectures (arm64), and a run must replay bit for bit
// on any machine. exp is computed here, not by math.Exp, which has
// per-architecture assembly.

const (
	ln2Hi  = 6.93147180369123816490e-01
	ln2Lo  = 1.90821492927058770002e-10
	log2e  = 1.44269504088896338700e+00
	expMax = 88.72283905206835 // ln(MaxFloat32)
	expMin = -103.97207708     // below this exp underflows float32 to 0
)

// exp64 is e^x in float64 arithmetic, accurate to a few ulp, with no
// architecture-specific code: x = k·ln2 + r, |r| ≤ ln2/2, e^r by a
// degree-13 Taylor polynomial in Horner form, scaled by 2^k.
func exp64(x float64) float64 {
	switch {
	case x != x:
		return x
	case x > 709.78:
		return math.Inf(1)
	case x < -745.2:
		return 0
	}
	k := math.Floor(float64(x*log2e) + 0.5)
	r := float64(x-float64(k*ln2Hi)) - float64(k*ln2Lo)
	p := 1.0 / 6227020800 // 1/13!
	p = float64(p*r) + 1.0/479001600
	p = float64(p*r) + 1.0/39916800
	p = float64(p*r) + 1.0/3628800
	p = float64(p*r) + 1.0/362880
	p = float64(p*r) + 1.0/40320
	p = float64(p*r) + 1.0/5040
	p = float64(p*r) + 1.0/720
	p = float64(p*r) + 1.0/120
	p = float64(p*r) + 1.0/24
	p = float64(p*r) + 1.0/6
	p = float64(p*r) + 0.5
	p = float64(p*r) + 1
	p = float64(p*r) + 1
	// p is in [0.7, 1.42]: for k in [−1021, 1023], p·2^k is normal, so
	// the product by 2^k is exact and equals math.Ldexp's.
	if k >= -1021 && k <= 1023 {
		return p * math.Float64frombits(uint64(int64(k)+1023)<<52)
	}
	return math.Ldexp(p, int(k))
}

// exp32 is e^x rounded to float32, computed in float64: x = (64m + j)·ln2/64
// + r with k = 64m + j = round(x·64/ln2) (round half to even) and
// |r| ≤ ln2/128; e^x = 2^m · 2^(j/64) · p(r) with p the degree-4 Taylor
// polynomial of e^r and 2^(j/64) from a 64-entry table (exp64). The
// relative error is below 1e-11, so the result rounds as the exact value
// does except for about one argument in 10^4.
func exp32(x float32) float32 {
	if x > expMax {
		return float32(math.Inf(1))
	}
	if !(x >= expMin) {
		if x != x {
			return x
		}
		return 0
	}
	const (
		inv  = 64 / math.Ln2
		c1   = math.Ln2 / 64
		half = 1.0 / 2
		six  = 1.0 / 6
		tf   = 1.0 / 24
	)
	xd := float64(x)
	// Adding 1.5·2^52 rounds to an integer (half to even) in the low bits.
	t := float64(xd*inv) + 0x1.8p52
	k := int64(math.Float64bits(t)) << 13 >> 13 // low 51 bits, sign-extended
	kf := t - 0x1.8p52
	r := xd - float64(kf*c1)
	p := float64(tf*r) + six
	p = float64(p*r) + half
	p = float64(p*r) + 1
	p = float64(p*r) + 1
	scale := math.Float64frombits(uint64((k>>6)+1023) << 52)
	return float32(float64(p*exp2Table[k&63]) * scale)
}

// expInto sets dst[i] = exp32(src[i]) for every i. It repeats exp32's
// body (same operations, same order: TestExpIntoIsExp32) inside one loop,
// so the scan's per-state exponentials pay no call and keep the
// constants in registers.
func expInto(dst, src []float32) {
	const (
		inv  = 64 / math.Ln2
		c1   = math.Ln2 / 64
		half = 1.0 / 2
		six  = 1.0 / 6
		tf   = 1.0 / 24
	)
	dst = dst[:len(src)]
	for i, x := range src {
		if x > expMax {
			dst[i] = float32(math.Inf(1))
			continue
		}
		if !(x >= expMin) {
			if x != x {
				dst[i] = x
			} else {
				dst[i] = 0
			}
			continue
		}
		xd := float64(x)
		t := float64(xd*inv) + 0x1.8p52
		k := int64(math.Float64bits(t)) << 13 >> 13
		kf := t - 0x1.8p52
		r := xd - float64(kf*c1)
		p := float64(tf*r) + six
		p = float64(p*r) + half
		p = float64(p*r) + 1
		p = float64(p*r) + 1
		scale := math.Float64frombits(uint64((k>>6)+1023) << 52)
		dst[i] = float32(float64(p*exp2Table[k&63]) * scale)
	}
}

// exp2Table[j] = 2^(j/64).
var exp2Table = func() (t [64]float64) {
	for j := range t {
		t[j] = exp64(float64(j) * (math.Ln2 / 64))
	}
	return t
}()

// siluInto sets y[i] = silu(x[i]) = x[i]·σ(x[i]) = x[i] / (1 + e^−x[i])
// (y may be x), with tmp (len(x) or more) holding e^−x from expInto.
func siluInto(y, x, tmp []float32) {
	e := tmp[:len(x)]
	for i, v := range x {
		e[i] = -v
	}
	expInto(e, e)
	y = y[:len(x)]
	for i, v := range x {
		y[i] = v / (1 + e[i])
	}
}

// softplusInto sets x[i] = log(1 + e^x[i]), and x[i] itself above 20 (as
// PyTorch's), with tmp (len(x) or more) holding e^x from expInto.
func softplusInto(x, tmp []float32) {
	e := tmp[:len(x)]
	expInto(e, x)
	for i, v := range x {
		if !(v > 20) { // NaN included: log1p(e^NaN)
			x[i] = float32(math.Log1p(float64(e[i])))
		}
	}
}

// dot is Σ a[i]·b[i] accumulated in float32 from i = 0 up.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for i, x := range a {
		s += float32(x * b[i])
	}
	return s
}

// matVec sets y[o] = Σ_i W[o][i]·x[i] for a row-major W of len(y) rows.
// Each row is summed sequentially (as dot); four rows go side by side
// only so the four independent sums overlap in the pipeline.
func matVec(y, w, x []float32) {
	n := len(x)
	w = w[:len(y)*n]
	o := 0
	for ; o+4 <= len(y); o += 4 {
		w0 := w[o*n:][:len(x)]
		w1 := w[(o+1)*n:][:len(x)]
		w2 := w[(o+2)*n:][:len(x)]
		w3 := w[(o+3)*n:][:len(x)]
		var s0, s1, s2, s3 float32
		for i, v := range x {
			s0 += float32(w0[i] * v)
			s1 += float32(w1[i] * v)
			s2 += float32(w2[i] * v)
			s3 += float32(w3[i] * v)
		}
		y4 := y[o : o+4]
		y4[0], y4[1], y4[2], y4[3] = s0, s1, s2, s3
	}
	for ; o < len(y); o++ {
		y[o] = dot(x, w[o*n:o*n+n])
	}
}

// rmsNorm sets y = x · rsqrt(mean(x²) + eps) · gamma.
func rmsNorm(y, x, gamma []float32) {
	var ss float32
	for _, v := range x {
		ss += float32(v * v)
	}
	ms := ss / float32(len(x))
	inv := float32(1 / math.Sqrt(float64(ms+normEps)))
	for i, v := range x {
		y[i] = float32(v*inv) * gamma[i]
	}
}

const normEps float32 = 1e-6
